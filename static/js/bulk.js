// The ticket list's checkboxes and bulk bar (DESIGN §19): the selected tickets go to
// POST /api/tickets/bulk/ in one request, and each ticket's result is shown: the changed ones
// counted, the refused ones named with the reason. The selection outlives the list redrawing
// itself (live_list.js replaces the table when one of its tickets changes).
(function () {
  "use strict";
  const bar = document.getElementById("bulk-bar");
  if (!bar) return;
  const result = document.getElementById("bulk-result");
  const selected = new Set();
  const max = parseInt(bar.dataset.max, 10) || 100;

  function $(id) { return document.getElementById(id); }
  function rows() { return Array.from(document.querySelectorAll("#ticket-list .row-select")); }

  function show() {
    const boxes = rows();
    boxes.forEach(function (box) { box.checked = selected.has(box.value); });
    const on = boxes.filter(function (box) { return box.checked; }).length;
    document.querySelectorAll(".select-all").forEach(function (all) {
      all.checked = on > 0 && on === boxes.length;
      all.indeterminate = on > 0 && on < boxes.length;
    });
    bar.hidden = selected.size === 0;
    $("bulk-count").textContent = selected.size + " selected";
    const merge = $("bulk-merge-into");
    if (merge) {
      const kept = merge.value;
      merge.replaceChildren(new Option("—", ""));
      selected.forEach(function (reference) { merge.add(new Option(reference, reference)); });
      merge.value = selected.has(kept) ? kept : "";
    }
  }

  document.addEventListener("change", function (event) {
    const box = event.target;
    if (box.classList && box.classList.contains("select-all")) {
      rows().forEach(function (row) {
        if (box.checked) selected.add(row.value); else selected.delete(row.value);
      });
      show();
    } else if (box.classList && box.classList.contains("row-select")) {
      if (box.checked) selected.add(box.value); else selected.delete(box.value);
      show();
    }
  });

  function value(id) { const field = $(id); return field ? field.value.trim() : ""; }

  function changeAsked() {
    const body = {};
    const assign = value("bulk-assign");
    if (assign) body.assign = assign === "-" ? null : assign;
    if (value("bulk-status")) body.status = value("bulk-status");
    if (value("bulk-priority")) body.priority = value("bulk-priority");
    if (value("bulk-tag")) body.add_tags = [value("bulk-tag")];
    return body;
  }

  function say(text, refused) {
    result.replaceChildren();
    result.hidden = false;
    result.classList.toggle("bulk-result-refused", refused.length > 0);
    const line = document.createElement("p");
    line.textContent = text;
    result.appendChild(line);
    if (refused.length) {
      const list = document.createElement("ul");
      list.id = "bulk-refused";
      refused.forEach(function (item) {
        const entry = document.createElement("li");
        entry.dataset.ticket = item.ticket;
        const reference = document.createElement("strong");
        reference.textContent = item.ticket;
        // Most refusals already name their ticket ("TCK-1004 cannot go from closed to
        // pending."): the reference is said once, in bold.
        const message = item.message || "";
        const rest = message.startsWith(item.ticket + " ")
          ? message.slice(item.ticket.length)
          : ": " + message;
        entry.append(reference, rest);
        list.appendChild(entry);
      });
      result.appendChild(list);
    }
  }

  async function redraw() {
    const response = await fetch(window.location.href, { credentials: "same-origin" });
    if (!response.ok) return;
    const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
    const old = $("ticket-list");
    const now = fresh.getElementById("ticket-list");
    if (old && now) old.replaceWith(document.importNode(now, true));
    show();
  }

  async function send(body, what) {
    const tickets = Array.from(selected);
    if (tickets.length > max) {
      say("Select at most " + max + " tickets at once.", []);
      return;
    }
    bar.querySelectorAll("button").forEach(function (button) { button.disabled = true; });
    try {
      const token = bar.querySelector("input[name=csrfmiddlewaretoken]").value;
      const response = await fetch(bar.dataset.api, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRFToken": token,
                   "Accept": "application/json" },
        body: JSON.stringify(Object.assign({ tickets: tickets }, body)),
      });
      const answer = await response.json().catch(function () { return {}; });
      if (!response.ok) {
        say(answer.message || "Nothing was changed: the desk did not answer.", []);
        return;
      }
      const refused = answer.results.filter(function (item) { return !item.ok; });
      const done = answer.results.length - refused.length;
      say(what + ": " + done + " of " + answer.results.length + " ticket" +
          (answer.results.length === 1 ? "" : "s") + " done" +
          (refused.length ? ", " + refused.length + " refused:" : "."), refused);
      if (!refused.length) {
        ["bulk-assign", "bulk-status", "bulk-priority", "bulk-tag", "bulk-merge-into"].forEach(
          function (id) { if ($(id)) $(id).value = ""; });
      }
      // The refused stay selected, to try again another way.
      selected.clear();
      refused.forEach(function (item) { selected.add(item.ticket); });
      await redraw();
    } catch (error) {
      say("Nothing was sent: the connection failed. Try again.", []);
    } finally {
      bar.querySelectorAll("button").forEach(function (button) { button.disabled = false; });
    }
  }

  $("bulk-apply").addEventListener("click", function () {
    const body = changeAsked();
    if (!Object.keys(body).length) {
      say("Choose an assignee, a status, a priority or a tag first.", []);
      return;
    }
    send(body, "Changed");
  });

  const merge = $("bulk-merge");
  if (merge) {
    merge.addEventListener("click", function () {
      const target = value("bulk-merge-into");
      if (!target) {
        say("Choose which selected ticket the others are merged into.", []);
        return;
      }
      const others = Array.from(selected).filter(function (reference) { return reference !== target; });
      if (!others.length) {
        say("Select the duplicates too: they are merged into " + target + ".", []);
        return;
      }
      if (!window.confirm("Merge " + others.join(", ") + " into " + target +
                          "? They will be closed, everything on them moved to " + target + ".")) return;
      send({ merge_into: target }, "Merged into " + target);
    });
  }

  $("bulk-clear").addEventListener("click", function () {
    selected.clear();
    show();
  });

  // live_list.js put a fresh table in: tick the selection again.
  new MutationObserver(show).observe(document.querySelector(".ticket-list-box"), { childList: true });

  show();
})();

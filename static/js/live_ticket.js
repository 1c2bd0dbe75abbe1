// The ticket page, live (DESIGN §14): it follows the ticket's change stream
// (/api/tickets/<ref>/events/stream/) and, when changes arrive, redraws what they touch from
// the page as the server renders it now: the conversation (new messages, delivery badges),
// the status, escalation and assignee, and the sidebar's panels (actions, priority, SLA, tags
// and CC, refunds, order, history). What the user is typing is never touched: the reply box and the assistant panel
// are left alone, and a sidebar form being filled in keeps its text until it is sent.
(function () {
  "use strict";
  const live = document.getElementById("ticket-live");
  if (!live || !window.EventSource) return;

  // Changes come in bursts (a reply: created, then sent; a refund: four statuses): one redraw
  // for a burst.
  const SETTLE_MS = 150;
  let timer = null;
  let drawing = false;
  let again = false;

  function busy(region) {
    if (region.contains(document.activeElement) && document.activeElement !== document.body) {
      return true;
    }
    return Array.from(region.querySelectorAll("textarea, input[type=text]")).some(function (f) {
      return f.value.trim() !== "";
    });
  }

  function replace(selector, fresh) {
    const old = document.querySelector(selector);
    const now = fresh.querySelector(selector);
    if (old && now && !busy(old)) old.replaceWith(document.importNode(now, true));
  }

  // The sidebar's cards by id, in the server's order: a card that appears (the first refund)
  // is put where the server puts it; one that is gone goes.
  function redrawSidebar(fresh) {
    const sidebar = document.querySelector("aside.sidebar");
    const now = fresh.querySelector("aside.sidebar");
    if (!sidebar || !now) return;
    let previous = null;
    Array.from(now.children).forEach(function (card) {
      const id = card.id;
      if (!id) return;
      const old = document.getElementById(id);
      let placed = old;
      if (!old) {
        placed = document.importNode(card, true);
        if (previous) previous.after(placed); else sidebar.prepend(placed);
      } else if (!busy(old)) {
        placed = document.importNode(card, true);
        old.replaceWith(placed);
      }
      previous = placed;
    });
    Array.from(sidebar.children).forEach(function (card) {
      if (card.id && !now.querySelector("#" + CSS.escape(card.id)) && !busy(card)) card.remove();
    });
  }

  async function redraw() {
    if (drawing) { again = true; return; }
    drawing = true;
    try {
      const response = await fetch(window.location.pathname, {
        credentials: "same-origin",
        headers: { "Accept": "text/html" },
      });
      if (!response.ok) return;
      const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
      replace(".ticket-head", fresh);
      replace("ol.messages", fresh);
      redrawSidebar(fresh);
      document.dispatchEvent(new CustomEvent("ticket:redrawn"));
    } catch (error) {
      // The next change redraws again; the page as it is stays usable.
    } finally {
      drawing = false;
      if (again) { again = false; schedule(); }
    }
  }

  function schedule() {
    window.clearTimeout(timer);
    timer = window.setTimeout(redraw, SETTLE_MS);
  }

  const TYPES = [
    "message.created", "message.delivery", "ticket.status", "ticket.assigned",
    "ticket.escalated", "refund.status", "run.started", "run.completed", "ticket.details",
    "ticket.merged",
  ];
  // The page shows every change up to data-after; the browser resumes with Last-Event-ID.
  const source = new EventSource(live.dataset.stream + "?after=" + (live.dataset.after || "0"));
  TYPES.forEach(function (type) {
    source.addEventListener(type, function (event) {
      live.dataset.after = event.lastEventId;
      // A delivery badge is simple enough to set at once; the redraw confirms it.
      if (type === "message.delivery") showDelivery(JSON.parse(event.data).data);
      schedule();
    });
  });

  const LABELS = { queued: "Queued", sent: "Sent", failed: "Failed" };
  function showDelivery(data) {
    const badge = document.querySelector("#message-" + data.id + " .delivery .badge");
    if (!badge || !LABELS[data.delivery]) return;
    badge.className = "badge badge-" + data.delivery;
    badge.textContent = LABELS[data.delivery];
    badge.closest(".delivery").dataset.delivery = data.delivery;
  }
})();

// The assistant panel: start a run, follow its events live (server-sent events, with polling
// as a fallback), and replay them after a reload. Everything shown comes from the run's events.
(function () {
  "use strict";
  const panel = document.getElementById("assistant");
  if (!panel) return;

  const form = document.getElementById("assistant-form");
  const input = document.getElementById("assistant-message");
  const askButton = document.getElementById("assistant-ask");
  const cancelButton = document.getElementById("assistant-cancel");
  const statusLine = document.getElementById("assistant-status");
  const progress = document.getElementById("assistant-progress");
  const proposal = document.getElementById("assistant-proposal");
  const answer = document.getElementById("assistant-answer");
  const warning = document.getElementById("assistant-warning");
  const trail = document.getElementById("assistant-trail");
  const runsUrl = panel.dataset.runsUrl;
  const FINAL = new Set(["run.completed", "run.failed", "run.cancelled"]);

  let runId = panel.dataset.run || "";
  let lastSeq = 0;
  let source = null;
  let pollTimer = null;

  function csrfToken() {
    const field = form && form.querySelector("input[name=csrfmiddlewaretoken]");
    return field ? field.value : "";
  }

  async function api(url, options) {
    const response = await fetch(url, Object.assign({
      credentials: "same-origin",
      headers: {"Content-Type": "application/json", "X-CSRFToken": csrfToken(),
                "Accept": "application/json"},
    }, options || {}));
    let body = null;
    try { body = await response.json(); } catch (err) { body = null; }
    if (!response.ok) {
      const message = body && body.message ? body.message : "Request failed (" + response.status + ")";
      throw new Error(message);
    }
    return body;
  }

  function setBusy(busy, text) {
    if (askButton) askButton.disabled = busy;
    if (cancelButton) cancelButton.hidden = !busy;
    statusLine.textContent = text || "";
  }

  function describe(event) {
    const data = event.data || {};
    if (data.summary) return data.summary;
    switch (event.type) {
      case "run.started": return "Started: " + (data.message || "working on your request");
      case "model.started": return "Thinking…";
      case "model.completed":
        return data.tool_calls && data.tool_calls.length ? "Decided to use " + data.tool_calls.join(", ") : "Writing the answer…";
      case "tool_call.started": return "Running " + (data.name || "a tool") + "…";
      case "tool_call.completed": return (data.name || "Tool") + (data.ok === false ? " refused: " + (data.error_code || "error") : " done");
      case "approval.required":
        return "Proposed refund " + (data.amount || "") + " " + (data.currency || "") + " — waiting for a reviewer";
      case "message": return data.content || "";
      case "run.completed": return "Done";
      case "run.failed": return "Failed: " + (data.reason || data.error || "see the run");
      case "run.cancelled": return "Cancelled";
      default: return event.type;
    }
  }

  function showProposal(data) {
    const amount = data.amount ? data.amount + " " + (data.currency || "") : "";
    proposal.hidden = false;
    proposal.innerHTML = "";
    const title = document.createElement("strong");
    title.textContent = "Proposed refund " + amount + " — waiting for a reviewer";
    const detail = document.createElement("div");
    detail.className = "muted";
    detail.textContent = "Request " + (data.request_id || "") + (data.version ? ", version " + data.version : "") +
      ". Nothing is refunded until a reviewer approves it.";
    proposal.append(title, detail);
  }

  function render(event) {
    if (event.seq <= lastSeq) return;
    lastSeq = event.seq;
    lastEventType = event.type;
    const data = event.data || {};
    // A finished tool call replaces the line that announced it.
    const existing = event.type === "tool_call.completed" && data.tool_call_id
      ? progress.querySelector('li[data-call="' + CSS.escape(data.tool_call_id) + '"]') : null;
    const item = existing || document.createElement("li");
    item.className = "progress-" + event.type.replace(".", "-");
    item.dataset.seq = event.seq;
    if (data.tool_call_id) item.dataset.call = data.tool_call_id;
    item.textContent = describe(event);
    if (!existing) progress.append(item);
    if (data.untrusted_warning) warning.hidden = false;
    if (event.type === "approval.required") showProposal(data);
    if (FINAL.has(event.type)) finish(event);
    else setBusy(true, "Working…");
  }

  function finish(event) {
    stopFollowing();
    const data = event.data || {};
    setBusy(false, event.type === "run.completed" ? "" : describe(event));
    if (data.final_answer || data.answer) {
      answer.hidden = false;
      answer.textContent = data.final_answer || data.answer;
    }
    loadRun();
    loadTrail();
  }

  async function loadRun() {
    if (!runId) return;
    try {
      const run = await api(runsUrl + runId + "/");
      if (run.final_answer) { answer.hidden = false; answer.textContent = run.final_answer; }
      if (run.untrusted_warning) warning.hidden = false;
    } catch (err) { statusLine.textContent = err.message; }
  }

  async function loadTrail() {
    if (!runId) return;
    try {
      const body = await api(runsUrl + runId + "/tool-calls/");
      const rows = Array.isArray(body) ? body : (body.results || []);
      const tbody = trail.querySelector("tbody");
      tbody.innerHTML = "";
      for (const call of rows) {
        const tr = document.createElement("tr");
        const cells = [call.tool_name, JSON.stringify(call.arguments),
          call.ok ? "ok" : (call.error_code || "error"), String(call.elapsed_ms)];
        for (const text of cells) {
          const td = document.createElement("td");
          td.textContent = text;
          tr.append(td);
        }
        tbody.append(tr);
      }
      trail.hidden = rows.length === 0;
    } catch (err) { /* the trail is a convenience; the answer is already shown */ }
  }

  function stopFollowing() {
    if (source) { source.close(); source = null; }
    if (pollTimer) { clearTimeout(pollTimer); pollTimer = null; }
  }

  async function poll() {
    try {
      const events = await api(runsUrl + runId + "/events/?after=" + lastSeq);
      (Array.isArray(events) ? events : events.results || []).forEach(render);
    } catch (err) { statusLine.textContent = err.message; }
    if (runId && !pollTimer && source === null && !FINAL.has(lastType())) {
      pollTimer = setTimeout(function () { pollTimer = null; poll(); }, 800);
    }
  }

  let lastEventType = "";
  function lastType() { return lastEventType; }

  function follow() {
    stopFollowing();
    if (!window.EventSource) { poll(); return; }
    source = new EventSource(runsUrl + runId + "/events/stream/?after=" + lastSeq);
    source.onmessage = function (message) { render(JSON.parse(message.data)); };
    ["run.started", "model.started", "model.completed", "tool_call.started", "tool_call.completed",
     "approval.required", "message", "run.completed", "run.failed", "run.cancelled"].forEach(function (type) {
      source.addEventListener(type, function (message) {
        const payload = JSON.parse(message.data);
        // The stream may carry the whole event or only its data.
        if (payload && payload.seq !== undefined && payload.type) render(payload);
        else render({seq: Number(message.lastEventId), type: type, data: payload});
      });
    });
    source.onerror = function () {
      // The stream ended or broke: fall back to polling unless the run is over.
      if (source) { source.close(); source = null; }
      if (!FINAL.has(lastType())) poll();
    };
  }

  if (form) {
    form.addEventListener("submit", async function (e) {
      e.preventDefault();
      const message = input.value.trim();
      if (!message) { statusLine.textContent = "Type a question first."; return; }
      setBusy(true, "Starting…");
      progress.innerHTML = ""; proposal.hidden = true; answer.hidden = true; trail.hidden = true;
      lastSeq = 0;
      try {
        const run = await api(panel.dataset.startUrl, {method: "POST", body: JSON.stringify({message: message})});
        runId = run.id;
        panel.dataset.run = runId;
        input.value = "";
        follow();
      } catch (err) {
        setBusy(false, err.message);
      }
    });
  }

  if (cancelButton) {
    cancelButton.addEventListener("click", async function () {
      cancelButton.disabled = true;
      try { await api(runsUrl + runId + "/cancel/", {method: "POST", body: "{}"}); }
      catch (err) { statusLine.textContent = err.message; }
      cancelButton.disabled = false;
    });
  }

  // After a reload, replay the latest run's events from the database.
  if (runId) follow();
})();

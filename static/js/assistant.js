// The assistant panel: start a run, follow its events live (server-sent events, with polling
// as a fallback), and replay them after a reload. Everything shown comes from the run's events,
// except the proposal's status, which is read from the refund request itself: it moves on
// (approved, refunded) long after the run has finished. The answer shows as the model writes it
// (message.delta events) and is replaced by the saved answer when the run completes.
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
  const answerText = document.getElementById("assistant-answer-text");
  const useAnswerButton = document.getElementById("assistant-use-answer");
  const escalateBox = document.getElementById("assistant-escalate");
  const warning = document.getElementById("assistant-warning");
  const trail = document.getElementById("assistant-trail");
  const steps = document.getElementById("assistant-steps");
  const stepsSummary = document.getElementById("assistant-steps-summary");
  const runsUrl = panel.dataset.runsUrl;
  const refundsUrl = panel.dataset.refundsUrl;
  const FINAL = new Set(["run.completed", "run.failed", "run.cancelled"]);
  const OVER_LIMIT = "AMOUNT_OVER_ROLE_LIMIT";

  // A refund request's status in words (its label in config/refund_statuses.py, which every
  // page shows; tests/test_vocabulary.py holds this copy to it), and what it means for the agent.
  const REFUND_STATUS = {
    pending_approval: ["Waiting for a reviewer", "Nothing is refunded until a reviewer approves it."],
    approved: ["Approved", "A reviewer approved it; the payment provider is being asked."],
    executing: ["Sending to the provider", "The payment provider is being asked to refund it."],
    provider_pending: ["Settling at the provider", "The money is on its way; it is not refunded until the provider settles it."],
    succeeded: ["Refunded", "The payment provider refunded the customer."],
    failed: ["Failed", "The payment provider refused it; nothing was refunded."],
    outcome_unknown: ["Outcome unknown", "Whether the money moved is being checked with the provider; don't tell the customer yet."],
    rejected: ["Rejected", "A reviewer rejected it; nothing was refunded."],
    expired: ["Expired", "It expired before a reviewer decided; nothing was refunded. Propose it again if it is still needed."],
    withdrawn: ["Withdrawn", "Taken back before a reviewer decided; nothing was refunded."],
  };
  // After these the status never changes again: stop asking.
  const REFUND_TERMINAL = new Set(["succeeded", "failed", "rejected", "expired", "withdrawn"]);
  const REFUND_POLL_MS = 5000;
  // A tab nobody looks at asks rarely; it asks at once when it is looked at again.
  const REFUND_POLL_HIDDEN_MS = 60000;

  let runId = panel.dataset.run || "";
  let lastSeq = 0;
  let lastEventType = "";
  let source = null;
  let pollTimer = null;
  let shownProposal = null; // the approval.required data of the proposal in the box
  let proposalTimer = null;
  let escalationNote = "";
  let liveText = ""; // the text of the latest model call, as its deltas built it
  let liveStep = null; // the step that model call belongs to

  function csrfToken() {
    const field = document.querySelector("input[name=csrfmiddlewaretoken]");
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
      const retryAfter = Number(response.headers.get("Retry-After")) || 0;
      let message = body && body.message ? body.message : "Request failed (" + response.status + ")";
      // A 429 from something in front of the desk (a proxy) carries no message of ours.
      if (response.status === 429 && !(body && body.message)) {
        message = "Too many requests." + (retryAfter ? " Try again in " + waitInWords(retryAfter) + "." : "");
      }
      const error = new Error(message);
      error.status = response.status;
      throw error;
    }
    return body;
  }

  // As the server words a wait (config/errors.py wait_in_words): rounded up.
  function waitInWords(seconds) {
    const whole = Math.max(Math.ceil(seconds), 1);
    if (whole < 60) return whole + (whole === 1 ? " second" : " seconds");
    const minutes = Math.ceil(whole / 60);
    return minutes + (minutes === 1 ? " minute" : " minutes");
  }

  // Over a fair-use limit or throttled: the reason and when to try again, where it is seen.
  function showLimit(message) {
    const box = document.getElementById("assistant-limit");
    if (!box) { statusLine.textContent = message; return; }
    box.textContent = message;
    box.hidden = !message;
  }

  // Money in events is a string ("129.00") or a number (129): always shown with two decimals.
  function formatAmount(value) {
    if (value === null || value === undefined || value === "") return "";
    const number = Number(value);
    return Number.isFinite(number) ? number.toFixed(2) : String(value);
  }

  function money(amount, currency) {
    const formatted = formatAmount(amount);
    return formatted ? formatted + (currency ? " " + currency : "") : "";
  }

  function lowerFirst(text) {
    return text.charAt(0).toLowerCase() + text.slice(1);
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
      // An error in words (agent/errors.py), never its code.
      case "tool_call.completed": return (data.name || "Tool") + (data.ok === false ? " did not go through" + (data.error_words ? ": " + data.error_words : ".") : " done");
      case "approval.required":
        return "Proposed refund " + money(data.amount, data.currency) + " — waiting for a reviewer";
      case "message": return data.content || "";
      case "run.completed": return "Done";
      case "run.failed": return "Failed: " + (data.reason || data.error || "see the run");
      case "run.cancelled": return "Cancelled";
      default: return event.type;
    }
  }

  // --- the proposal and its live status ----------------------------------------------------

  function showProposal(data) {
    shownProposal = data;
    proposal.hidden = false;
    proposal.innerHTML = "";
    const title = document.createElement("strong");
    title.className = "proposal-title";
    const status = document.createElement("span");
    status.id = "assistant-proposal-status";
    title.append("Proposed refund " + money(data.amount, data.currency) + " — ", status);
    const detail = document.createElement("div");
    detail.className = "muted";
    detail.id = "assistant-proposal-detail";
    const checked = document.createElement("div");
    checked.className = "muted proposal-checked";
    checked.id = "assistant-proposal-checked";
    const withdraw = document.createElement("button");
    withdraw.type = "button";
    withdraw.className = "warn";
    withdraw.id = "assistant-proposal-withdraw";
    withdraw.textContent = "Withdraw";
    withdraw.hidden = true; // until the request says whose it is and that it still waits
    withdraw.addEventListener("click", askWhyWithdraw);
    const refused = document.createElement("p");
    refused.className = "warning";
    refused.id = "assistant-proposal-refused";
    refused.setAttribute("role", "alert");
    refused.hidden = true;
    proposal.append(title, detail, checked, withdraw, withdrawForm(), refused);
    // approval.required is only sent for a request waiting for a reviewer; the request itself
    // says what it is now.
    showProposalStatus("pending_approval");
    refreshProposalStatus();
  }

  function showProposalStatus(status) {
    const words = REFUND_STATUS[status] || [status.replace(/_/g, " "), ""];
    const statusText = document.getElementById("assistant-proposal-status");
    const detail = document.getElementById("assistant-proposal-detail");
    if (!statusText || !shownProposal) return;
    statusText.textContent = lowerFirst(words[0]);
    statusText.dataset.status = status;
    proposal.dataset.status = status;
    detail.textContent = "Request " + (shownProposal.request_id || "") +
      (shownProposal.version ? ", version " + shownProposal.version : "") + ". " + words[1];
    // The answer was written while the proposal waited for a reviewer: say so before it is
    // copied into a reply to the customer.
    const stale = document.getElementById("assistant-answer-stale");
    if (stale) {
      stale.hidden = status === "pending_approval";
      stale.textContent = "The refund has moved on since this answer was written (now: " +
        lowerFirst(words[0]) + "); edit what it says about the refund before you send it.";
    }
  }

  function stopProposalPolling() {
    if (proposalTimer) { clearTimeout(proposalTimer); proposalTimer = null; }
  }

  async function refreshProposalStatus() {
    stopProposalPolling();
    const data = shownProposal;
    if (!data || !data.request_id) return;
    let status = proposal.dataset.status || "pending_approval";
    try {
      const refund = await api(refundsUrl + encodeURIComponent(data.request_id) + "/");
      if (data !== shownProposal) return; // a newer proposal replaced this one meanwhile
      const moved = refund.status !== status;
      status = refund.status;
      showProposalStatus(status);
      if (moved) loadRun(); // the answer's "Since this answer" line follows the decision
      offerWithdraw(refund);
      document.getElementById("assistant-proposal-checked").textContent =
        REFUND_TERMINAL.has(status) ? "" : "Checked at " + new Date().toLocaleTimeString([], {hour: "2-digit", minute: "2-digit", hourCycle: "h23"}) + "; updates by itself.";
    } catch (err) {
      if (err.status === 403 || err.status === 404) return; // asking again would not help
    }
    if (data === shownProposal && !REFUND_TERMINAL.has(status)) {
      proposalTimer = setTimeout(refreshProposalStatus,
        document.hidden ? REFUND_POLL_HIDDEN_MS : REFUND_POLL_MS);
    }
  }

  document.addEventListener("visibilitychange", function () {
    if (!document.hidden && proposalTimer) refreshProposalStatus();
  });

  // The button for whoever may take the proposal back while it waits: its requester or a
  // supervisor. The server decides (refunds.services.refund_withdraw); this only offers it.
  function offerWithdraw(refund) {
    const button = document.getElementById("assistant-proposal-withdraw");
    if (!button) return;
    const form = document.getElementById("assistant-withdraw-form");
    const may = refund.status === "pending_approval" &&
      (refund.requested_by === panel.dataset.username || panel.dataset.supervisor === "true");
    if (!may && form) form.hidden = true;
    button.hidden = !may || Boolean(form && !form.hidden); // the form asking why is open
  }

  // Withdrawing asks first, as the Refunds panel does: why (optional), then a second press.
  function withdrawForm() {
    const make = function (tag, properties) {
      return Object.assign(document.createElement(tag), properties);
    };
    const form = make("form", {id: "assistant-withdraw-form", className: "withdraw-form", hidden: true});
    const label = make("label", {htmlFor: "assistant-withdraw-note", className: "muted",
      textContent: "Why (optional)"});
    const note = make("input", {type: "text", id: "assistant-withdraw-note", maxLength: 2000});
    const confirm = make("button", {type: "submit", className: "warn",
      id: "assistant-withdraw-confirm", textContent: "Withdraw the proposal"});
    const keep = make("button", {type: "button", id: "assistant-withdraw-keep",
      textContent: "Keep it"});
    keep.addEventListener("click", function () { closeWithdrawForm(true); });
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      withdrawProposal(note.value.trim());
    });
    form.append(label, note, confirm, keep);
    return form;
  }

  function askWhyWithdraw() {
    const form = document.getElementById("assistant-withdraw-form");
    document.getElementById("assistant-proposal-withdraw").hidden = true;
    form.hidden = false;
    document.getElementById("assistant-withdraw-note").focus();
  }

  function closeWithdrawForm(offerAgain) {
    const form = document.getElementById("assistant-withdraw-form");
    if (form) form.hidden = true;
    if (offerAgain) document.getElementById("assistant-proposal-withdraw").hidden = false;
  }

  async function withdrawProposal(note) {
    const data = shownProposal;
    const button = document.getElementById("assistant-withdraw-confirm");
    const refused = document.getElementById("assistant-proposal-refused");
    if (!data || !data.request_id || !button) return;
    button.disabled = true;
    refused.hidden = true;
    try {
      const refund = await api(refundsUrl + encodeURIComponent(data.request_id) + "/withdraw/",
        {method: "POST", body: JSON.stringify(note ? {note: note} : {})});
      closeWithdrawForm(false);
      if (data !== shownProposal) return;
      showProposalStatus(refund.status);
      offerWithdraw(refund);
      document.getElementById("assistant-proposal-checked").textContent = "";
      stopProposalPolling();
    } catch (err) {
      // A reviewer decided it first, or this user may not: say so, and show what it is now.
      refused.textContent = err.message;
      refused.hidden = false;
      refreshProposalStatus();
    } finally {
      button.disabled = false;
    }
  }

  // --- a refund over the role's limit: offer the escalation form -------------------------

  async function suggestEscalation(toolCallId) {
    if (!escalateBox || panel.dataset.escalated === "true") return;
    let amount = "";
    let orderId = panel.dataset.orderId || "";
    let policySays = "";
    try {
      const body = await api(runsUrl + runId + "/tool-calls/");
      const calls = Array.isArray(body) ? body : (body.results || []);
      const call = calls.find(function (c) { return c.tool_call_id === toolCallId; });
      if (call && call.arguments) {
        amount = formatAmount(call.arguments.amount);
        orderId = String(call.arguments.order_id || orderId);
      }
      // The policy's own words on the limit name whom it goes to ("escalate to a supervisor",
      // or "above every desk limit; …, who takes it beyond the desk").
      const verdicts = (((call || {}).result || {}).error || {}).verdicts || [];
      const limit = verdicts.find(function (v) { return v.clause === "R-5"; });
      if (limit && limit.detail) policySays = limit.detail;
    } catch (err) { /* the suggestion still stands, with fewer details */ }
    const currency = orderId === panel.dataset.orderId ? panel.dataset.currency : "";
    const refund = amount ? "Refund of " + money(amount, currency) : "The refund";
    const onOrder = orderId ? " on order " + orderId : "";
    escalationNote = refund + onOrder + " is over my limit; the assistant proposes escalation.";
    document.getElementById("assistant-escalate-text").textContent =
      refund + onOrder + " is over what your role may propose. " + (policySays
        ? "The policy (R-5): " + policySays + "."
        : "Escalate it to a supervisor.");
    escalateBox.hidden = false;
  }

  if (escalateBox) {
    document.getElementById("assistant-escalate-button").addEventListener("click", function () {
      const note = document.getElementById("escalate-note");
      if (!note) return;
      if (!note.value.trim()) note.value = escalationNote;
      note.focus({preventScroll: true});
      note.scrollIntoView({block: "center", behavior: "smooth"});
    });
  }

  // --- the customer draft as the start of a reply (DESIGN §13) ------------------------------

  // "Use as reply" asks the desk for the reply the customer could be sent as things are now
  // (POST /api/tickets/<ref>/draft/), not the internal answer. Whatever lands in the box
  // arrives as an Internal note: sending it to the customer is the agent's explicit choice.
  function fillReply(text, hint) {
    const box = document.getElementById("reply-body");
    if (!box) return;
    const typed = box.value.replace(/\s+$/, "");
    box.value = typed ? typed + "\n\n" + text : text;
    const internalChoice = document.getElementById("reply-internal");
    if (internalChoice) {
      internalChoice.checked = true;
      internalChoice.dispatchEvent(new Event("change", {bubbles: true}));
    }
    let note = document.getElementById("reply-draft-hint");
    if (!note) {
      note = document.createElement("p");
      note.id = "reply-draft-hint";
      note.className = "muted";
      box.insertAdjacentElement("afterend", note);
    }
    note.textContent = hint;
    box.focus({preventScroll: true});
    box.setSelectionRange(box.value.length, box.value.length);
    box.scrollIntoView({block: "center", behavior: "smooth"});
  }

  if (useAnswerButton) {
    useAnswerButton.addEventListener("click", function () {
      useAnswerButton.disabled = true;
      fetch("/api/tickets/" + encodeURIComponent(panel.dataset.ticket) + "/draft/", {
        method: "POST",
        credentials: "same-origin",
        headers: {"X-CSRFToken": csrfToken(), "Accept": "application/json"},
      })
        .then(function (response) {
          if (!response.ok) throw new Error("HTTP " + response.status);
          return response.json();
        })
        .then(function (draft) {
          fillReply(draft.body,
            "A draft for the customer, as things are now. It is set to Internal note: choose " +
            "Public reply to email it.");
        })
        .catch(function () {
          fillReply(answerText.textContent.trim(),
            "The customer draft could not be loaded: this is the assistant's internal answer.");
        })
        .finally(function () { useAnswerButton.disabled = false; });
    });
  }

  // --- the answer as the model writes it ---------------------------------------------------

  // Each delta continues its step's text at its offset: a delta seen again changes nothing, a
  // model call that is retried (offset 0 again) starts the text over, and so does the next
  // step's call.
  function showDelta(data) {
    if (typeof data.text !== "string") return;
    const offset = Number(data.offset) || 0;
    if (data.step !== liveStep) { liveStep = data.step; liveText = ""; }
    if (offset > liveText.length) return; // a gap: the saved answer will come whole
    liveText = liveText.slice(0, offset) + data.text;
    setStreaming(true);
    answer.hidden = false;
    answerText.textContent = liveText;
  }

  // A half-written answer is not one: nothing to copy into a reply yet.
  function setStreaming(streaming) {
    const actions = answer.querySelector(".answer-actions");
    if (actions) actions.hidden = streaming;
    if (streaming) {
      answer.dataset.streaming = "true";
      answer.setAttribute("aria-busy", "true");
    } else {
      delete answer.dataset.streaming;
      answer.removeAttribute("aria-busy");
    }
  }

  // A run that ended without an answer: drop the text that was arriving.
  function dropLiveText() {
    liveText = "";
    liveStep = null;
    if (answer.dataset.streaming !== "true") return;
    setStreaming(false);
    answerText.textContent = "";
    answer.hidden = true;
  }

  // --- the progress lines: open while the run works, one folded line once it ends ---------

  function openSteps() {
    if (!steps) return;
    steps.hidden = progress.children.length === 0;
    steps.open = true;
    stepsSummary.textContent = "Working…";
  }

  function foldSteps(event) {
    if (!steps) return;
    const count = progress.children.length;
    steps.hidden = count === 0;
    steps.open = false;
    const ending = {"run.completed": "Done", "run.failed": "Failed", "run.cancelled": "Cancelled"};
    stepsSummary.textContent = (ending[event.type] || "Ended") + " · " + count +
      (count === 1 ? " step" : " steps") + " (show)";
  }

  // --- the run's events --------------------------------------------------------------------

  function render(event) {
    if (event.seq <= lastSeq) return;
    lastSeq = event.seq;
    lastEventType = event.type;
    const data = event.data || {};
    if (event.type === "message.delta") {
      showDelta(data);
      setBusy(true, "Writing the answer…");
      return;
    }
    // A finished tool call replaces the line that announced it.
    const existing = event.type === "tool_call.completed" && data.tool_call_id
      ? progress.querySelector('li[data-call="' + CSS.escape(data.tool_call_id) + '"]') : null;
    const item = existing || document.createElement("li");
    item.className = "progress-" + event.type.replace(".", "-");
    item.dataset.seq = event.seq;
    if (data.tool_call_id) item.dataset.call = data.tool_call_id;
    item.textContent = describe(event);
    if (!existing) progress.append(item);
    if (steps && steps.hidden) steps.hidden = false;
    if (data.untrusted_warning) warning.hidden = false;
    if (event.type === "approval.required") showProposal(data);
    if (event.type === "tool_call.completed" && data.error_code === OVER_LIMIT) {
      suggestEscalation(data.tool_call_id);
    }
    if (FINAL.has(event.type)) finish(event);
    else setBusy(true, "Working…");
  }

  function showAnswer(text) {
    liveText = "";
    liveStep = null;
    setStreaming(false);
    answer.hidden = false;
    answerText.textContent = text;
  }

  // What the run did, as the desk renders it from the tool log: the model's prose may say
  // otherwise, this does not.
  function showDid(lines) {
    const box = document.getElementById("assistant-did");
    const list = document.getElementById("assistant-did-list");
    if (!box || !list) return;
    list.replaceChildren(...lines.map((line) => {
      const item = document.createElement("li");
      item.textContent = line;
      return item;
    }));
    box.hidden = lines.length === 0;
  }

  // What became of the refunds the answer spoke of after it was written (the server reads
  // their history): an answer made stale by a decision says so.
  function showSince(text) {
    const since = document.getElementById("assistant-answer-since");
    if (!since) return;
    since.textContent = text;
    since.hidden = !text;
  }

  function finish(event) {
    stopFollowing();
    foldSteps(event);
    const data = event.data || {};
    setBusy(false, event.type === "run.completed" ? "" : describe(event));
    if (data.final_answer || data.answer) showAnswer(data.final_answer || data.answer);
    else dropLiveText();
    loadRun();
    loadTrail();
    refreshProposalStatus();
  }

  // The server checks the answer against the refunds that exist: an answer saying a refund is
  // paid, approved or on its way that the records contradict must not reach a customer as is.
  function showContradiction(run) {
    const box = document.getElementById("assistant-answer-contradicts");
    if (!box) return;
    box.hidden = !run.answer_contradicts_state;
    if (box.hidden) return;
    const actual = (run.answer_check && run.answer_check.actual) || [];
    const facts = actual.map(function (r) {
      const words = REFUND_STATUS[r.status] ? REFUND_STATUS[r.status][0] : r.status_label || r.status;
      return "request " + r.request_id + " (" + r.amount + " on order " + r.order_id + ") is " + lowerFirst(words);
    });
    box.textContent = "Check before replying: this answer says more about the refund than the records do. " +
      (facts.length ? "In fact " + facts.join("; ") + "." : "There is no refund request on this ticket; nothing has been refunded.");
  }

  async function loadRun() {
    if (!runId) return;
    try {
      const run = await api(runsUrl + runId + "/");
      if (run.final_answer) showAnswer(run.final_answer);
      showDid(run.did || []);
      showSince(run.since_answer || "");
      showContradiction(run);
      if (run.untrusted_warning) warning.hidden = false;
    } catch (err) { statusLine.textContent = err.message; }
  }

  function cell(content) {
    const td = document.createElement("td");
    td.append(content);
    return td;
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
        const args = document.createElement("pre");
        args.className = "json";
        args.textContent = JSON.stringify(call.arguments, null, 2);
        tr.append(
          cell(call.tool_name),
          cell(args),
          cell(call.ok ? "ok" : (call.error_words || "did not go through")),
          cell(String(call.elapsed_ms)),
        );
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
    if (runId && !pollTimer && source === null && !FINAL.has(lastEventType)) {
      pollTimer = setTimeout(function () { pollTimer = null; poll(); }, 800);
    }
  }

  function follow() {
    stopFollowing();
    if (!window.EventSource) { poll(); return; }
    source = new EventSource(runsUrl + runId + "/events/stream/?after=" + lastSeq);
    source.onmessage = function (message) { render(JSON.parse(message.data)); };
    ["run.started", "model.started", "model.completed", "tool_call.started", "tool_call.completed",
     "approval.required", "message", "message.delta", "run.completed", "run.failed",
     "run.cancelled"].forEach(function (type) {
      source.addEventListener(type, function (message) {
        const payload = JSON.parse(message.data);
        // The stream may carry the whole event or only its data.
        if (payload && payload.seq !== undefined && payload.type) render(payload);
        else render({seq: Number(message.lastEventId), type: type, data: payload});
      });
    });
    source.onerror = function () {
      // The stream ended or broke. The browser reconnects by itself, sending Last-Event-ID, so
      // the stream resumes after the last event it delivered; render() skips any seen again.
      // If it gave up (an error answer, not a stream), poll unless the run is over.
      if (source && source.readyState === EventSource.CONNECTING && !FINAL.has(lastEventType)) return;
      if (source) { source.close(); source = null; }
      if (!FINAL.has(lastEventType)) poll();
    };
  }

  function clearPanel() {
    ["assistant-answer-stale", "assistant-answer-since", "assistant-answer-contradicts"].forEach(function (id) {
      const element = document.getElementById(id);
      if (element) element.hidden = true;
    });
    progress.innerHTML = "";
    openSteps();
    proposal.hidden = true;
    shownProposal = null;
    stopProposalPolling();
    answer.hidden = true;
    dropLiveText();
    trail.hidden = true;
    if (escalateBox) escalateBox.hidden = true;
    lastSeq = 0;
    lastEventType = "";
  }

  if (form) {
    form.addEventListener("submit", async function (e) {
      e.preventDefault();
      const message = input.value.trim();
      if (!message) { statusLine.textContent = "Type a question first."; return; }
      showLimit("");
      setBusy(true, "Starting…");
      clearPanel();
      try {
        const run = await api(panel.dataset.startUrl, {method: "POST", body: JSON.stringify({message: message})});
        runId = run.id;
        panel.dataset.run = runId;
        input.value = "";
        follow();
      } catch (err) {
        setBusy(false, err.status === 429 ? "" : err.message);
        if (err.status === 429) showLimit(err.message);
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

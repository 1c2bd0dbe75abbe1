// A ticket list, live: it follows its tickets (/api/ticket-list/stream/?tickets=...) and
// redraws itself from the server when one of them changes or a ticket is opened, keeping
// its filters, sort and page (the same URL).
(function () {
  "use strict";
  let live = document.getElementById("list-live");
  if (!live || !window.EventSource) return;
  let source = null;

  function follow() {
    const tickets = encodeURIComponent(live.dataset.tickets || "");
    source = new EventSource(live.dataset.stream + "?tickets=" + tickets);
    source.addEventListener("changed", redraw);
  }

  function replace(selector, fresh) {
    const old = document.querySelector(selector);
    const now = fresh.querySelector(selector);
    if (old && now) old.replaceWith(document.importNode(now, true));
  }

  async function redraw() {
    try {
      const response = await fetch(window.location.href, { credentials: "same-origin" });
      if (!response.ok) return;
      const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
      replace("#ticket-list", fresh);
      replace("nav.tabs", fresh);
      replace(".page-head .muted", fresh);
      replace("#list-live", fresh);
      live = document.getElementById("list-live");
      // The tickets on the page may be others now: follow those.
      source.close();
      follow();
    } catch (error) {
      // The next change tries again.
    }
  }

  follow();
})();

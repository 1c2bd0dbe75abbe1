// The header's notification count, live: the user's notification stream
// (/api/notifications/stream/) sends the unread count whenever it changes.
(function () {
  "use strict";
  const count = document.getElementById("notification-count");
  if (!count || !window.EventSource) return;
  const source = new EventSource(count.dataset.stream);
  source.addEventListener("notifications", function (event) {
    const unread = JSON.parse(event.data).unread;
    count.textContent = String(unread);
    count.dataset.unread = String(unread);
    count.classList.toggle("count-alert", unread > 0);
    count.hidden = unread === 0;  // nothing unread: no badge
    count.setAttribute("aria-label", unread + " unread");
  });
})();

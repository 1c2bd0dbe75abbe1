// The ticket page's reply box: the Send button says what pressing it will do (email the
// customer, or add a note only the desk sees). The forms work without this script; it only
// keeps the label in step with the choice.
(function () {
  "use strict";
  const form = document.getElementById("reply-form");
  const send = document.getElementById("reply-send");
  if (!form || !send) return;

  function chosenVisibility() {
    const checked = form.querySelector("input[name=visibility]:checked");
    const only = form.querySelector("input[type=hidden][name=visibility]");
    return checked ? checked.value : (only ? only.value : "internal");
  }

  function updateLabel() {
    const isPublic = chosenVisibility() === "public";
    send.textContent = isPublic ? send.dataset.publicLabel : send.dataset.internalLabel;
    form.classList.toggle("reply-is-public", isPublic);
    form.classList.toggle("reply-is-internal", !isPublic);
  }

  form.addEventListener("change", function (event) {
    if (event.target.name === "visibility") updateLabel();
  });
  // A second press while the first is on its way would post the reply twice.
  form.addEventListener("submit", function () {
    window.setTimeout(function () { send.disabled = true; }, 0);
  });
  // Coming back with the browser's Back button shows the page as it was left: usable again.
  window.addEventListener("pageshow", function () { send.disabled = false; });
  updateLabel();
})();

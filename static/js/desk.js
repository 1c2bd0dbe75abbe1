// Small helpers shared by the desk's pages and admin. Each one only adds to a page that already
// works without JavaScript.
(function () {
  "use strict";

  // <button data-copy="value">: copy a value shown shortened (a fingerprint, an id).
  document.addEventListener("click", function (event) {
    const button = event.target.closest("button[data-copy]");
    if (!button || !navigator.clipboard) return;
    event.preventDefault();
    const label = button.textContent;
    navigator.clipboard.writeText(button.dataset.copy).then(function () {
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = label; }, 1500);
    });
  });

  // <form data-confirm="question">: ask once more before a decision that cannot be undone. The
  // server still requires the form's own confirmation field.
  document.addEventListener("submit", function (event) {
    const form = event.target.closest("form[data-confirm]");
    if (form && !window.confirm(form.dataset.confirm)) event.preventDefault();
  });
})();

// Godwit dashboard: refreshes the figures every 5 s by fetching the panel
// again from /ui/panel (same cookie, no page reload); a session that ended
// goes back to the login form. No dependencies.
(function () {
  "use strict";
  var panel = document.getElementById("panel");
  var readAt = document.getElementById("read-at");
  if (!panel) {
    return;
  }
  function refresh() {
    fetch("/ui/panel", { credentials: "same-origin", cache: "no-store" })
      .then(function (r) {
        if (r.status === 401) {
          window.location.assign("/ui/login");
          return;
        }
        if (!r.ok) {
          return;
        }
        var at = r.headers.get("x-godwit-read-at");
        return r.text().then(function (html) {
          panel.innerHTML = html;
          if (at && readAt) {
            readAt.textContent = at;
          }
        });
      })
      .catch(function () {
        // Keep the last figures; the next tick tries again.
      });
  }
  window.setInterval(refresh, 5000);
})();

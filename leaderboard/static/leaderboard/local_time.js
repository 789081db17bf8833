// Shows every <time class="local-time" datetime="..."> (written in UTC by the server) in the
// viewer's time zone; the UTC text stays in the title.
(function () {
  "use strict";
  var format = new Intl.DateTimeFormat(undefined, {
    year: "numeric", month: "short", day: "numeric",
    hour: "2-digit", minute: "2-digit", timeZoneName: "short",
  });
  document.querySelectorAll("time.local-time[datetime]").forEach(function (node) {
    var moment = new Date(node.getAttribute("datetime"));
    if (!isNaN(moment.getTime())) {
      node.textContent = format.format(moment);
    }
  });
})();

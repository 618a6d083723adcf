// The dashboard's script: the kill switch's confirmation, copy buttons,
// and live updates over the stream socket (read-only, opened with the
// session cookie). Plain JavaScript, no library; the pages work without
// it, only less live.
// tbOpenStream opens the stream socket (/ws/stream, with the session's
// cookie, read-only) and keeps it open for the page's live parts: each
// time it opens it calls onOpen(send), send(message) writing a JSON
// message; each frame goes to onFrame(frame); onClose (optional) hears
// each close. A socket closed because the session ended leads to the
// sign-in page; any other is opened again after a pause growing from
// 1 s to 30 s.
function tbOpenStream(onOpen, onFrame, onClose) {
  "use strict";
  var delay = 1000;
  function connect() {
    var ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws/stream");
    ws.onopen = function () {
      delay = 1000;
      onOpen(function (msg) { ws.send(JSON.stringify(msg)); });
    };
    ws.onmessage = function (m) {
      var f;
      try { f = JSON.parse(m.data); } catch (e) { return; }
      onFrame(f);
    };
    ws.onclose = function (ev) {
      if (onClose) onClose(ev);
      if (ev.code === 1008 && /session/.test(ev.reason || "")) { location.assign("/app/signin"); return; }
      setTimeout(connect, delay);
      delay = Math.min(delay * 2, 30000);
    };
  }
  connect();
}

(function () {
  "use strict";

  var meta = document.querySelector('meta[name="csrf-token"]');
  var csrf = meta ? meta.getAttribute("content") : "";

  // ---- Copy buttons: <button data-copy="#id"> copies #id's text. ----
  document.addEventListener("click", function (ev) {
    var b = ev.target.closest ? ev.target.closest("button[data-copy]") : null;
    if (!b) return;
    var el = document.querySelector(b.getAttribute("data-copy"));
    if (!el) return;
    var text = el.textContent.trim();
    var done = function () {
      var was = b.textContent;
      b.textContent = "Copied";
      setTimeout(function () { b.textContent = was; }, 1500);
    };
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(done, function () { selectText(el); });
    } else {
      selectText(el);
    }
  });

  function selectText(el) {
    var r = document.createRange();
    r.selectNodeContents(el);
    var s = window.getSelection();
    s.removeAllRanges();
    s.addRange(r);
  }

  // ---- The kill switch: hold 1.5 s, or tap twice within 3 s. ----
  var HOLD_MS = 1500, TAP_MS = 3000;
  var kill = document.getElementById("kill-switch");
  var killForm = document.getElementById("kill-form");
  var killStatus = document.getElementById("kill-status");
  var bar = document.querySelector(".kill-bar");
  if (kill && killForm) {
    var holdTimer = null, armedUntil = 0, armTimer = null, held = false, busy = false;

    var say = function (text) { if (killStatus) killStatus.textContent = text; };
    var idle = function () {
      var on = kill.getAttribute("data-state") === "on";
      say(on ? "On: new entries are refused. Hold or tap twice to turn it off."
             : "Off. Hold for 1.5 s, or tap twice, to stop trading and flatten every account.");
    };
    var disarm = function () {
      armedUntil = 0;
      kill.classList.remove("armed");
      if (armTimer) { clearTimeout(armTimer); armTimer = null; }
    };
    var stopHold = function () {
      if (holdTimer) { clearTimeout(holdTimer); holdTimer = null; }
      if (bar) bar.classList.remove("running");
    };
    var send = function () {
      if (busy) return;
      busy = true;
      disarm();
      stopHold();
      var enabled = kill.getAttribute("data-state") !== "on";
      say(enabled ? "Turning the kill switch on…" : "Turning the kill switch off…");
      var body = new URLSearchParams();
      body.set("enabled", enabled ? "true" : "false");
      body.set("csrf", csrf);
      fetch("/app/kill-switch", {
        method: "POST", body: body, credentials: "same-origin",
        headers: { "Accept": "application/json", "X-CSRF-Token": csrf }
      }).then(function (res) {
        return res.json().then(function (j) { return { ok: res.ok, status: res.status, j: j }; });
      }).then(function (r) {
        busy = false;
        if (r.status === 401) { location.assign("/app/signin"); return; }
        if (!r.ok) {
          say("Not changed: " + ((r.j && r.j.detail) || "the relay refused it") + ".");
          return;
        }
        var on = !!r.j.killSwitch;
        kill.setAttribute("data-state", on ? "on" : "off");
        var input = killForm.querySelector('input[name="enabled"]');
        if (input) input.value = on ? "false" : "true";
        if (on) {
          say(r.j.applied ? "On: your PC stopped trading and flattened every account."
                          : "On: recorded. Your PC is offline; it applies it (flattens) as soon as it connects. New entries are refused now.");
        } else {
          say(r.j.applied ? "Off: trading is allowed again." : "Off: recorded; your PC applies it when it connects.");
        }
      }).catch(function () {
        busy = false;
        say("The relay did not answer. Check the state before trying again.");
      });
    };

    kill.addEventListener("pointerdown", function (ev) {
      if (ev.button !== undefined && ev.button !== 0) return;
      held = false;
      stopHold();
      if (bar) { void bar.offsetWidth; bar.classList.add("running"); }
      say("Keep holding…");
      holdTimer = setTimeout(function () { holdTimer = null; held = true; send(); }, HOLD_MS);
    });
    ["pointerup", "pointerleave", "pointercancel"].forEach(function (t) {
      kill.addEventListener(t, function () {
        if (holdTimer) { stopHold(); if (!armedUntil) idle(); }
      });
    });
    kill.addEventListener("contextmenu", function (ev) { ev.preventDefault(); });
    // A click is a tap (or Enter, or Space): the first arms, a second
    // within 3 s confirms. A completed hold's click is not a tap.
    killForm.addEventListener("submit", function (ev) {
      ev.preventDefault();
      if (held) { held = false; return; }
      var now = Date.now();
      if (armedUntil && now <= armedUntil) { send(); return; }
      armedUntil = now + TAP_MS;
      kill.classList.add("armed");
      say("Tap again to confirm");
      armTimer = setTimeout(function () { disarm(); idle(); }, TAP_MS);
    });
  }

  if (!csrf) return; // not signed in: nothing live

  // ---- Live updates over the stream socket. ----
  var status = document.getElementById("status");
  var activity = document.getElementById("activity");
  var refetching = false, lastFetch = 0;

  function refetchStatus() {
    if (!status || refetching) return;
    refetching = true;
    lastFetch = Date.now();
    fetch("/app/status", { credentials: "same-origin", headers: { "Accept": "text/html" } }).then(function (res) {
      if (res.status === 401) { location.assign("/app/signin"); return null; }
      return res.ok ? res.text() : null;
    }).then(function (html) {
      refetching = false;
      if (html !== null && html !== undefined) {
        var focused = document.activeElement && status.contains(document.activeElement);
        status.innerHTML = html;
        if (focused) status.focus();
      }
    }).catch(function () { refetching = false; });
  }

  // While the agent is online, the status is fetched again every few
  // seconds (positions and orders change without a status frame).
  setInterval(function () {
    var a = document.getElementById("agent-status");
    if (a && a.getAttribute("data-state") === "online" && Date.now() - lastFetch > 4000 && !document.hidden) refetchStatus();
  }, 5000);

  function setCell(row, cls, value) {
    var c = row.querySelector("." + cls);
    if (c && typeof value === "number") c.textContent = value.toFixed(2);
  }

  function onPnl(f) {
    (f.accounts || []).forEach(function (a) {
      var rows = document.querySelectorAll("#accounts tr[data-account]");
      for (var i = 0; i < rows.length; i++) {
        if (rows[i].getAttribute("data-account") !== a.account) continue;
        setCell(rows[i], "cash", a.cashValue);
        setCell(rows[i], "realized", a.realizedProfitLoss);
        setCell(rows[i], "unrealized", a.unrealizedProfitLoss);
      }
    });
  }

  function onActivity(e) {
    if (!activity || activity.getAttribute("data-live") !== "on" || !e) return;
    var kind = activity.getAttribute("data-kind"), acct = activity.getAttribute("data-account");
    if (kind && e.kind !== kind) return;
    if (acct && e.account !== acct) return;
    var empty = activity.querySelector("li.empty");
    if (empty) empty.remove();
    var li = document.createElement("li");
    li.setAttribute("data-kind", e.kind);
    var t = document.createElement("time");
    t.setAttribute("datetime", e.at);
    t.textContent = String(e.at).replace("T", " ").replace(/\.\d+/, "").replace("Z", " UTC");
    li.appendChild(t);
    var add = function (cls, text) {
      if (!text) return;
      li.appendChild(document.createTextNode(" "));
      var s = document.createElement("span");
      s.className = cls;
      s.textContent = text;
      li.appendChild(s);
    };
    add("kind", e.kind);
    add("account", e.account);
    add("summary", e.summary);
    add("source", e.source && e.source.kind);
    activity.insertBefore(li, activity.firstChild);
  }

  if (status || activity) {
    tbOpenStream(function (send) {
      if (status) send({ action: "streamPnl", enabled: true, interval: 1000 });
      if (activity) send({ action: "subscribeActivity" });
    }, function (f) {
      if (f.type === "status") refetchStatus();
      else if (f.type === "pnlUpdate") onPnl(f);
      else if (f.type === "activity") onActivity(f.event);
    });
  }

  // ---- The broker page: the link's state, fetched again every few
  // seconds while the login connects (not once it is linked, unlinked or
  // refused). ----
  var brokerBox = document.getElementById("broker-status");
  if (brokerBox) {
    var settled = { unlinked: 1, linked: 1, login_failed: 1, captcha_required: 1, rate_limited: 1 };
    var brokerBusy = false;
    setInterval(function () {
      var link = document.getElementById("broker-link");
      var state = link ? link.getAttribute("data-state") : "";
      if (brokerBusy || !state || settled[state] || document.hidden) return;
      brokerBusy = true;
      fetch("/app/broker/status", { credentials: "same-origin", headers: { "Accept": "text/html" } }).then(function (res) {
        if (res.status === 401) { location.assign("/app/signin"); return null; }
        return res.ok ? res.text() : null;
      }).then(function (html) {
        brokerBusy = false;
        if (html) brokerBox.innerHTML = html;
      }).catch(function () { brokerBusy = false; });
    }, 2000);
  }
})();

// ---- The Management API's editors: "Add a row" clones a list's blank
// row (without script one blank row is always there), and the state of
// the copier or monitor a page shows follows the stream socket: an
// activity entry about it fetches its state block again (a Management
// API read, only then), a P&L frame of its account its P&L block (the
// agent's figures, no Management API read). ----
(function () {
  "use strict";

  // Renames the inputs of a cloned row from prefix.N. to prefix.M.
  function renumber(row, prefix, from, to) {
    var old = prefix + "." + from, now = prefix + "." + to;
    var swap = function (v) {
      return v.split(old + ".").join(now + ".").split(old + "._").join(now + "._");
    };
    row.setAttribute("data-row", now);
    row.setAttribute("data-index", String(to));
    var els = row.querySelectorAll("[name], [id], [for], [aria-describedby]");
    for (var i = 0; i < els.length; i++) {
      ["name", "id", "for", "aria-describedby"].forEach(function (a) {
        var v = els[i].getAttribute(a);
        if (v) els[i].setAttribute(a, swap(v));
      });
    }
  }

  function clearRow(row) {
    var els = row.querySelectorAll("input, select");
    for (var i = 0; i < els.length; i++) {
      var el = els[i];
      if (el.type === "checkbox") el.checked = false;
      else if (el.tagName === "SELECT") el.selectedIndex = 0;
      else el.value = "";
      el.removeAttribute("aria-invalid");
    }
    var errs = row.querySelectorAll(".field-error");
    for (var j = 0; j < errs.length; j++) errs[j].remove();
  }

  // With script the blank rows of lists that have rows (or need none)
  // wait hidden until "Add a row" shows a copy of one; without script
  // they are there to fill in.
  var blanks = document.querySelectorAll(".editor .row.blank[data-tucked]");
  for (var b = 0; b < blanks.length; b++) blanks[b].hidden = true;
  var adds = document.querySelectorAll("button.add-row");
  for (var i = 0; i < adds.length; i++) {
    adds[i].hidden = false;
    adds[i].addEventListener("click", function (ev) {
      var button = ev.currentTarget;
      var prefix = button.getAttribute("data-rows");
      var set = button.closest("fieldset");
      if (!set) return;
      var rows = set.querySelectorAll(":scope > .row");
      if (!rows.length) return;
      var blank = set.querySelector(":scope > .row.blank") || rows[rows.length - 1];
      var next = 0;
      for (var k = 0; k < rows.length; k++) {
        next = Math.max(next, parseInt(rows[k].getAttribute("data-index"), 10) + 1);
      }
      var row = blank.cloneNode(true);
      renumber(row, prefix, blank.getAttribute("data-index"), next);
      clearRow(row);
      row.hidden = false;
      row.classList.remove("blank");
      row.removeAttribute("data-tucked");
      var title = row.querySelector(".row-title");
      if (title) title.textContent = "New row";
      set.insertBefore(row, button);
      var first = row.querySelector("input, select");
      if (first) first.focus();
    });
  }

  var state = document.getElementById("resource-state");
  if (!state || !document.querySelector('meta[name="csrf-token"]') || !window.WebSocket) return;

  // Fetches a fragment and puts it in place of the element with its id.
  function replace(url, id, done) {
    fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } }).then(function (res) {
      if (res.status === 401) { location.assign("/app/signin"); return null; }
      return res.ok ? res.text() : null;
    }).then(function (html) {
      if (html) {
        var box = document.createElement("div");
        box.innerHTML = html;
        var fresh = box.querySelector("#" + id), old = document.getElementById(id);
        if (fresh && old) {
          var focused = document.activeElement && old.contains(document.activeElement);
          old.replaceWith(fresh);
          if (focused) { var b = fresh.querySelector("button"); if (b) b.focus(); }
        }
      }
      if (done) done();
    }).catch(function () { if (done) done(); });
  }

  // The state is read now and again shortly after (the agent's report
  // may be stored a moment after its activity entry).
  var stateTimers = [];
  function refetchState() {
    stateTimers.forEach(clearTimeout);
    var href = state.getAttribute("data-href");
    stateTimers = [0, 1000, 3000].map(function (ms) {
      return setTimeout(function () {
        replace(href, "resource-state", function () { state = document.getElementById("resource-state") || state; });
      }, ms);
    });
  }

  var pnlBusy = false, pnlLast = 0;
  function refetchPnl() {
    var box = document.getElementById("monitor-pnl");
    if (!box || pnlBusy || Date.now() - pnlLast < 2000 || document.hidden) return;
    pnlBusy = true;
    pnlLast = Date.now();
    replace(box.getAttribute("data-href"), "monitor-pnl", function () { pnlBusy = false; });
  }

  function concerns(e) {
    var id = state.getAttribute("data-id"), account = state.getAttribute("data-account");
    var d = e.detail || {};
    if (d.id === id || d.copierId === id) return true;
    return !!account && e.account === account && (e.kind === "monitor.tripped" || e.kind === "config.changed");
  }

  tbOpenStream(function (send) {
    send({ action: "subscribeActivity" });
    if (document.getElementById("monitor-pnl")) send({ action: "streamPnl", enabled: true, interval: 1000 });
  }, function (f) {
    if (f.type === "activity" && f.event && concerns(f.event)) refetchState();
    else if (f.type === "status") { pnlLast = 0; refetchPnl(); }
    else if (f.type === "pnlUpdate") {
      var account = state.getAttribute("data-account");
      if (account && (f.accounts || []).some(function (a) { return a.account === account; })) refetchPnl();
    }
  });
})();

// ---- The settings' editors: a field that applies only to some values of
// another (an alert destination's URL for a webhook or Discord) shows only
// while that field holds one of them (without script every field shows,
// and the relay leaves out what does not apply); an alert destination's
// last deliveries follow the stream socket: an alert.sent or alert.failed
// entry about it fetches the block again. ----
(function () {
  "use strict";

  var conds = document.querySelectorAll(".only-if[data-if-field]");
  for (var i = 0; i < conds.length; i++) {
    (function (box) {
      var form = box.closest("form");
      var control = form ? form.querySelector('[name="' + box.getAttribute("data-if-field") + '"]') : null;
      if (!control) return; // not editable here: the page shows only what applies
      var values = (box.getAttribute("data-if-values") || "").split(" ");
      var apply = function () {
        var on = values.indexOf(control.value) >= 0;
        box.hidden = !on;
        var inputs = box.querySelectorAll("input, select, textarea");
        for (var k = 0; k < inputs.length; k++) inputs[k].disabled = !on;
      };
      control.addEventListener("change", apply);
      apply();
    })(conds[i]);
  }

  var box = document.getElementById("deliveries");
  if (!box || !document.querySelector('meta[name="csrf-token"]') || !window.WebSocket) return;
  var id = box.getAttribute("data-id");
  var live = "off", dropped = 0;

  var busy = false, again = false;
  function refetch() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(box.getAttribute("data-href"), { credentials: "same-origin", headers: { "Accept": "text/html" } }).then(function (res) {
      if (res.status === 401) { location.assign("/app/signin"); return null; }
      return res.ok ? res.text() : null;
    }).then(function (html) {
      if (html) {
        var holder = document.createElement("div");
        holder.innerHTML = html;
        var fresh = holder.querySelector("#deliveries");
        if (fresh) { fresh.setAttribute("data-live", live); box.replaceWith(fresh); box = fresh; }
      }
    }).catch(function () {}).then(function () {
      busy = false;
      if (again) { again = false; refetch(); }
    });
  }

  tbOpenStream(function (send) {
    send({ action: "subscribeActivity" });
  }, function (f) {
    if (f.type === "activitySubscribed") {
      // What was written between the page's load and now is read once.
      live = "on";
      box.setAttribute("data-live", live);
      refetch();
      return;
    }
    if (f.type !== "activity") return;
    var e = f.event;
    if ((f.dropped || 0) > dropped) { dropped = f.dropped; refetch(); return; }
    if (e && (e.kind === "alert.sent" || e.kind === "alert.failed") && e.detail && e.detail.destinationId === id) refetch();
  }, function () {
    live = "off";
    box.setAttribute("data-live", live);
  });
})();

// ---- The TradingView page: the builder's message written as the trader
// chooses (by the relay: GET /app/webhook/message), the message's Copy
// button, and the alert history kept live over the stream socket. ----
(function () {
  "use strict";

  // <button data-copy-value="#id"> copies the value of a form field.
  document.addEventListener("click", function (ev) {
    var b = ev.target.closest ? ev.target.closest("button[data-copy-value]") : null;
    if (!b) return;
    var el = document.querySelector(b.getAttribute("data-copy-value"));
    if (!el) return;
    var done = function () {
      var was = b.textContent;
      b.textContent = "Copied";
      setTimeout(function () { b.textContent = was; }, 1500);
    };
    var select = function () { el.focus(); el.select(); };
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(el.value).then(done, select);
    } else {
      select();
    }
  });

  var builder = document.getElementById("webhook-builder");
  var message = document.getElementById("webhook-message");
  var tryForm = document.getElementById("webhook-try");
  var problem = document.getElementById("builder-error");
  if (builder && message) {
    var fields = builder.querySelectorAll(".field[data-commands]");
    var command = builder.querySelector('[name="command"]');
    var orderType = builder.querySelector('[name="order_type"]');
    var has = function (list, v) { return (" " + (list || "") + " ").indexOf(" " + v + " ") >= 0; };
    // Only the inputs of the keys the chosen command takes are shown.
    var show = function () {
      for (var i = 0; i < fields.length; i++) {
        var f = fields[i], on = has(f.getAttribute("data-commands"), command.value);
        var types = f.getAttribute("data-order-types");
        if (on && types) on = has(types, orderType.value);
        f.hidden = !on;
      }
    };
    var timer = null, seq = 0;
    var update = function () {
      var q = new URLSearchParams(new FormData(builder)).toString();
      var mine = ++seq;
      fetch("/app/webhook/message?" + q, { credentials: "same-origin", headers: { "Accept": "application/json" } })
        .then(function (res) {
          if (res.status === 401) { location.assign("/app/signin"); return null; }
          return res.ok ? res.json() : null;
        }).then(function (j) {
          if (mine !== seq) return;
          message.removeAttribute("aria-busy");
          if (!j || !j.data) return;
          var d = j.data;
          message.value = d.message;
          if (tryForm) tryForm.setAttribute("action", d.tryAction);
          if (problem) { problem.textContent = d.error; problem.hidden = !d.error; }
          var inputs = builder.querySelectorAll("input, select");
          for (var i = 0; i < inputs.length; i++) {
            var el = inputs[i], bad = !!d.error && el.name === d.field;
            var ids = (el.getAttribute("aria-describedby") || "").split(" ").filter(function (id) {
              return id && id !== "builder-error";
            });
            if (bad) ids.unshift("builder-error");
            if (bad) el.setAttribute("aria-invalid", "true"); else el.removeAttribute("aria-invalid");
            if (ids.length) el.setAttribute("aria-describedby", ids.join(" ")); else el.removeAttribute("aria-describedby");
          }
        }).catch(function () { if (mine === seq) message.removeAttribute("aria-busy"); });
    };
    // The message box is busy from a change until the relay's message
    // for the latest choices is in it.
    var changed = function () {
      message.setAttribute("aria-busy", "true");
      show();
      clearTimeout(timer);
      timer = setTimeout(update, 250);
    };
    builder.addEventListener("input", changed);
    builder.addEventListener("change", changed);
    builder.classList.add("live");
    if (command && orderType) show();
  }

  // The history's newest page is fetched again when an alert is
  // received (webhook.received on the activity stream), and once the
  // socket is open (an alert may have come while it opened).
  var table = document.getElementById("webhook-alerts");
  if (!table || table.getAttribute("data-live") !== "on" || !table.tBodies.length) return;
  var rows = table.tBodies[0];
  var fetching = false, again = false;
  var refetch = function () {
    if (fetching) { again = true; return; }
    fetching = true;
    fetch("/app/webhook/alerts", { credentials: "same-origin", headers: { "Accept": "text/html" } }).then(function (res) {
      if (res.status === 401) { location.assign("/app/signin"); return null; }
      return res.ok ? res.text() : null;
    }).then(function (html) {
      fetching = false;
      if (html !== null && html !== undefined) rows.innerHTML = html;
      if (again) { again = false; refetch(); }
    }).catch(function () { fetching = false; });
  };
  tbOpenStream(function (send) {
    send({ action: "subscribeActivity" });
    refetch();
  }, function (f) {
    if (f.type === "activity" && f.event && f.event.kind === "webhook.received") refetch();
  });
})();

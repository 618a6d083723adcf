#!/usr/bin/env python3
"""A small trading bot on the relay's WebSocket stream API (/ws/stream).

It subscribes to an instrument, places a bracketed market order (PlaceOrder
with the ATM template "ATM 1 Target": a stop loss and a profit target around
the entry), follows the fills of its own orders (the entry and the
template's stop and target; the account's other fills are not its own) with
the ListExecutions RPC over the socket, and flattens the account's position
in the instrument when it stops: on Ctrl-C (SIGINT), SIGTERM, after
--seconds, or on any error.

Environment:
  RELAY_URL   the relay's base URL (default http://127.0.0.1:8080, make demo's)
  API_TOKEN   an API token (tb_api_...); never printed
  ACCOUNT     the account (default Sim101)
  INSTRUMENT  the instrument (default ES, the front month)

Needs Python 3.9+ and websocket-client (Debian: python3-websocket; the
system /usr/bin/python3 has it after `make examples-deps`, which installs
only that and python3-requests). HTTP calls use the standard library.

Server frames are told apart by the presence of "type": events (status,
subscribed, marketData, ...) have one; replies to our rpc frames do not, and
carry the id we sent.
"""

import argparse
import itertools
import json
import os
import re
import signal
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

import websocket  # websocket-client

TEMPLATE = "ATM 1 Target"

# The names the platform gives an ATM template's stop and target orders
# (NinjaTrader's: Stop1, Target1, ...).
BRACKET_NAME = re.compile(r"^(Stop|Target)[0-9]+$")


def log(msg):
    print(msg, flush=True)


class Bot:
    def __init__(self, relay, token, account, instrument):
        self.relay = relay.rstrip("/")
        self.token = token
        self.account = account
        self.instrument = instrument
        self.ws = None
        self.ids = itertools.count(1)
        self.entry_id = None
        # The orders the bot placed (the entry) or its template placed for
        # it (the stop and target); only their fills are the bot's.
        self.own_orders = set()
        # The account's orders before the entry: none of them is the bot's.
        self.older_orders = set()
        self.seen_executions = set()
        self.last_quote_log = 0.0

    # --- the socket -------------------------------------------------------

    def connect(self):
        u = urllib.parse.urlsplit(self.relay)
        scheme = "wss" if u.scheme == "https" else "ws"
        url = urllib.parse.urlunsplit((scheme, u.netloc, "/ws/stream", "", ""))
        self.ws = websocket.create_connection(
            url, header=["Authorization: Bearer " + self.token], timeout=10
        )
        log("connected to " + url)

    def send(self, frame):
        self.ws.send(json.dumps(frame))

    def recv(self, timeout):
        """Returns the next frame, or None when none came within timeout."""
        self.ws.settimeout(timeout)
        try:
            raw = self.ws.recv()
        except websocket.WebSocketTimeoutException:
            return None
        if not raw:
            raise ConnectionError("the relay closed the socket")
        return json.loads(raw)

    def rpc(self, api, args, timeout=30):
        """Sends an rpc frame and returns its reply's data; events that
        arrive meanwhile are handled as they come."""
        rid = str(next(self.ids))
        self.send({"action": "rpc", "id": rid, "api": api, "args": args})
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(api + ": no reply in time")
            frame = self.recv(left)
            if frame is None:
                continue
            if is_event(frame):
                self.on_event(frame)
                continue
            if frame.get("id") != rid:
                continue  # a reply to a call we gave up on
            if not frame.get("success"):
                raise RuntimeError(
                    "%s failed: %s: %s" % (api, frame.get("error"), frame.get("detail"))
                )
            return frame.get("data") or {}

    def on_event(self, frame):
        kind = frame["type"]
        if kind == "status":
            log("status: agent connected" if frame.get("agentConnected") else "status: agent away")
        elif kind == "subscribed":
            log("subscribed: " + ", ".join(frame.get("instruments", [])))
            for q in frame.get("quotes") or []:
                self.on_quote(q, force=True)
        elif kind == "marketData":
            for q in frame.get("quotes") or []:
                self.on_quote(q)
        elif kind == "error":
            log("error frame: %s: %s" % (frame.get("error"), frame.get("detail")))

    def on_quote(self, q, force=False):
        now = time.monotonic()
        if force or now - self.last_quote_log >= 2:
            self.last_quote_log = now
            log("quote: %s bid %s ask %s last %s" % (q.get("instrument"), q.get("bid"), q.get("ask"), q.get("last")))

    # --- trading ----------------------------------------------------------

    def enter(self):
        before = self.rpc("ListOrders", {"account": self.account, "activeOnly": False, "lookbackTime": 600})
        self.older_orders = {o.get("orderId") for o in before.get("orders") or []}
        data = self.rpc(
            "PlaceOrder",
            {
                "account": self.account,
                "action": "Buy",
                "instrument": self.instrument,
                "orderType": "Market",
                "quantity": 1,
                "timeInForce": "Day",
                "strategy": TEMPLATE,
                # A retry with the same key places nothing twice.
                "idempotencyKey": "bot-" + uuid.uuid4().hex,
            },
        )
        self.entry_id = data.get("orderId")
        self.own_orders.add(self.entry_id)
        order = data.get("order") or {}
        log("placed: entry %s (%s) with %s" % (self.entry_id, order.get("orderState"), TEMPLATE))

    def is_own(self, o):
        """Whether an order is the bot's: its entry, or the template's stop
        or target placed after it (the simulator names their OCO group after
        the entry: atm-<entry>-<n>)."""
        oid = o.get("orderId")
        if oid in self.own_orders:
            return True
        if (o.get("oco") or "").startswith("atm-%s-" % self.entry_id):
            return True
        return (
            oid not in self.older_orders
            and o.get("instrument", "").split(" ")[0] == self.instrument.split(" ")[0]
            and BRACKET_NAME.match(o.get("name") or "") is not None
        )

    def check_fills(self):
        orders = self.rpc("ListOrders", {"account": self.account, "activeOnly": False, "lookbackTime": 600})
        for o in orders.get("orders") or []:
            if self.is_own(o):
                self.own_orders.add(o.get("orderId"))
        data = self.rpc("ListExecutions", {"account": self.account, "lookbackTime": 600})
        for ex in data.get("executions") or []:
            if ex.get("id") in self.seen_executions:
                continue
            if ex.get("orderId") not in self.own_orders:
                continue  # another bot's, a trader's, or an older fill
            self.seen_executions.add(ex.get("id"))
            role = "entry" if ex.get("orderId") == self.entry_id else "exit"
            log(
                "fill: %s %s %s %s @ %s (order %s)"
                % (role, ex.get("marketPosition"), ex.get("quantity"), ex.get("instrument"), ex.get("price"), ex.get("orderId"))
            )
        orders = self.rpc("ListOrders", {"account": self.account, "activeOnly": True})
        working = [
            "%s %s %s" % (o.get("name"), o.get("orderType"), o.get("limitPrice") or o.get("stopPrice"))
            for o in orders.get("orders") or []
            if o.get("orderId") in self.own_orders
        ]
        return working

    def run(self, seconds):
        self.connect()
        self.send({"action": "subscribe", "instruments": [self.instrument]})
        self.enter()
        deadline = time.monotonic() + seconds if seconds else None
        last_working = None
        while deadline is None or time.monotonic() < deadline:
            working = self.check_fills()
            if working != last_working:
                log("working orders: " + ("; ".join(working) if working else "none"))
                last_working = working
            # Read events for a second before the next look at the fills.
            until = time.monotonic() + 1
            while time.monotonic() < until:
                frame = self.recv(max(0.05, until - time.monotonic()))
                if frame is not None and is_event(frame):
                    self.on_event(frame)

    def flatten(self):
        """Closes the position and cancels the bracket orders, over HTTP so
        that it works also when the socket is gone."""
        path = "/v1/api/accounts/%s/positions/flatten" % urllib.parse.quote(self.account)
        body = json.dumps({"instrument": self.instrument, "cancelOrders": True}).encode()
        req = urllib.request.Request(self.relay + path, data=body, method="POST")
        req.add_header("Authorization", "Bearer " + self.token)
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                out = json.load(resp)
        except urllib.error.HTTPError as e:
            out = json.load(e)
        if not out.get("success"):
            log("flatten failed: %s: %s" % (out.get("error"), out.get("detail")))
            return False
        data = out.get("data", out)  # the standard profile wraps, the compatible does not
        log(
            "flattened: %d position(s) closed, %d order(s) cancelled"
            % (len(data.get("closedPositions") or []), len(data.get("cancelledOrderIds") or []))
        )
        return True

    def close(self):
        if self.ws is not None:
            try:
                self.ws.close()
            except Exception:
                pass


def is_event(frame):
    # Replies to rpc frames carry no type (relays before that change sent
    # "rpc"); every event names its type.
    return "type" in frame and frame["type"] != "rpc"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=0, help="stop after this many seconds (default: run until Ctrl-C)")
    opts = p.parse_args()
    token = os.environ.get("API_TOKEN")
    if not token:
        sys.exit("set API_TOKEN to an API token (make demo prints one)")
    bot = Bot(
        os.environ.get("RELAY_URL", "http://127.0.0.1:8080"),
        token,
        os.environ.get("ACCOUNT", "Sim101"),
        os.environ.get("INSTRUMENT", "ES"),
    )

    def on_term(_signum, _frame):
        raise KeyboardInterrupt  # SIGTERM stops the bot as Ctrl-C does

    signal.signal(signal.SIGTERM, on_term)
    code = 0
    try:
        bot.run(opts.seconds)
    except KeyboardInterrupt:
        log("interrupted: flattening")
    except Exception as e:  # report, then flatten all the same
        log("error: %s" % e)
        code = 1
    finally:
        # Ctrl-C again while flattening would leave the position open.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        bot.close()
        if not bot.flatten():
            code = code or 1
    sys.exit(code)


if __name__ == "__main__":
    main()

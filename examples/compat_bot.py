#!/usr/bin/env python3
"""A bot written for the compatible response profile, with plain requests.

A token issued with `relay tokens issue ... --profile compatible` (or switched
with `relay tokens profile`) gets the members of each answer at the top level
next to "success", so code written against the service the API specification
describes reads resp["accounts"], resp["orderId"], resp["positions"] and
resp["closedPositions"] unchanged:

  ListAccounts   {"accounts":[...],"success":true}
  PlaceOrder     {"orderId":...,"order":{...},"success":true}
  ListPositions  {"positions":[...],"count":n,"success":true}
  ClosePosition  {"orderId":...,"orderIds":[...],"closedPositions":[...],...,"success":true}
  Flatten        {"closedPositions":[...],"orderIds":[...],"cancelledOrderIds":[...],"success":true}

Environment: RELAY_URL (default http://127.0.0.1:8080), API_TOKEN (a token
with the compatible profile; never printed), ACCOUNT (default: the first
account listed), INSTRUMENT (default ES). Needs requests.
"""

import os
import sys
import uuid

import requests


def main():
    relay = os.environ.get("RELAY_URL", "http://127.0.0.1:8080").rstrip("/")
    token = os.environ.get("API_TOKEN")
    if not token:
        sys.exit("set API_TOKEN to an API token with the compatible profile")
    instrument = os.environ.get("INSTRUMENT", "ES")
    s = requests.Session()
    s.headers["Authorization"] = "Bearer " + token
    api = relay + "/v1/api"

    def call(method, path, **kw):
        r = s.request(method, api + path, timeout=30, **kw)
        resp = r.json()
        if not resp.get("success"):
            sys.exit("%s %s: HTTP %d %s: %s" % (method, path, r.status_code, resp.get("error"), resp.get("detail")))
        return resp

    resp = call("GET", "/accounts")
    names = [a["name"] for a in resp["accounts"]]
    print("accounts:", ", ".join(names), flush=True)
    account = os.environ.get("ACCOUNT") or names[0]

    resp = call(
        "POST",
        "/accounts/%s/orders/place" % account,
        json={"action": "Buy", "instrument": instrument, "orderType": "Market", "quantity": 2, "timeInForce": "Day"},
        headers={"Idempotency-Key": "compat-" + uuid.uuid4().hex},
    )
    order_id = resp["orderId"]
    print("placed:", order_id, resp["order"]["orderState"], flush=True)

    resp = call("GET", "/accounts/%s/positions" % account)
    pos = [p for p in resp["positions"] if p["quantity"]]
    if not pos:
        sys.exit("no position after the fill")
    print("position: %s %s %d @ %s (count %d)" % (pos[0]["instrument"], pos[0]["marketPosition"], pos[0]["quantity"], pos[0]["averagePrice"], resp["count"]), flush=True)

    # percent is a fraction: 0.5 closes half.
    resp = call("POST", "/accounts/%s/positions/close" % account, json={"instrument": instrument, "percent": 0.5})
    closed = resp["closedPositions"]
    print("closed half: order %s, %d position(s) touched" % (resp["orderId"], len(closed)), flush=True)

    resp = call("GET", "/accounts/%s/positions" % account)
    left = sum(p["quantity"] for p in resp["positions"])
    print("left:", left, flush=True)

    resp = call("POST", "/accounts/%s/positions/flatten" % account, json={"instrument": instrument})
    print("flattened: %d position(s) closed" % len(resp["closedPositions"]), flush=True)

    resp = call("GET", "/accounts/%s/positions" % account)
    print("positions after flatten:", resp["count"], flush=True)


if __name__ == "__main__":
    main()

package admit

import (
	"net/http"

	"tradebridge/relay/auth"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// Permits runs d's plan and gate steps (3 and 4 of Admit) for p, a user
// another door admitted: the dashboard, whose door admits every plan,
// asks the broker family's door whether the session's user may link a
// broker login. It answers nil, or the 403 (or the gate's error) Admit
// would have answered at d. It charges nothing and holds no place.
func (d *Door) Permits(r *http.Request, p auth.Principal) *httpapi.Error {
	if e := d.planError(p); e != nil {
		return e
	}
	if d.Gate != nil {
		return d.Gate(r, p)
	}
	return nil
}

// planError is the refusal of p by d's plan step, nil when the plan is
// enough.
func (d *Door) planError(p auth.Principal) *httpapi.Error {
	if d.Plan == "" || p.Plan.AtLeast(d.Plan) {
		return nil
	}
	code := d.PlanCode
	if code == "" {
		code = errcode.PlanRequired
	}
	detail := d.PlanDetail
	if detail == "" {
		detail = "the user's plan does not include this"
	}
	return &httpapi.Error{Status: http.StatusForbidden, Code: code, Detail: detail}
}

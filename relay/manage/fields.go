package manage

import (
	"net/http"
	"strconv"
	"strings"

	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// fieldErrs collects the fields at fault in one request, so that a caller
// learns every mistake at once.
type fieldErrs []httpapi.FieldError

// add records the field at path with code.
func (f *fieldErrs) add(path, code string) {
	*f = append(*f, httpapi.FieldError{Path: path, Code: code})
}

// limit records the field at path with code and the bound it crossed.
func (f *fieldErrs) limit(path, code string, limit any) {
	*f = append(*f, httpapi.FieldError{Path: path, Code: code, Limit: limit})
}

// pattern records a string at path that does not match pattern.
func (f *fieldErrs) pattern(path, pattern string) {
	*f = append(*f, httpapi.FieldError{Path: path, Code: errcode.FieldCodeStringPatternMismatch, Pattern: pattern})
}

// allowed records a value at path that is not one of allowed.
func (f *fieldErrs) allowed(path string, allowed ...string) {
	*f = append(*f, httpapi.FieldError{Path: path, Code: errcode.FieldCodeNotAllowed, Allowed: allowed})
}

// err returns nil when no field is at fault, else 422 validation_failed
// listing them.
func (f fieldErrs) err() *httpapi.Error {
	if len(f) == 0 {
		return nil
	}
	return &httpapi.Error{Status: http.StatusUnprocessableEntity, Code: errcode.ValidationFailed,
		Detail: "some fields are invalid; fields lists each", Fields: f}
}

// refuse returns an error with the code's status (errcode.Status), the
// detail and the fields at fault.
func refuse(code, detail string, fields ...httpapi.FieldError) *httpapi.Error {
	return &httpapi.Error{Status: errcode.Status(code), Code: code, Detail: detail, Fields: fields}
}

// path joins the parts of a dotted field path: path("followers", 1,
// "account") is "followers.1.account".
func path(parts ...any) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('.')
		}
		switch v := p.(type) {
		case string:
			b.WriteString(v)
		case int:
			b.WriteString(strconv.Itoa(v))
		}
	}
	return b.String()
}

// TimePattern is the form of a time of day: "HH:MM" on a 5-minute mark.
const TimePattern = `^([01][0-9]|2[0-3]):[0-5][05]$`

// minuteOfDay parses a time of day of TimePattern into minutes after
// midnight.
func minuteOfDay(s string) (int, bool) {
	if len(s) != 5 || s[2] != ':' {
		return 0, false
	}
	h, err1 := strconv.Atoi(s[:2])
	m, err2 := strconv.Atoi(s[3:])
	if err1 != nil || err2 != nil || s[0] == '+' || s[3] == '+' || h < 0 || h > 23 || m < 0 || m > 59 || m%5 != 0 {
		return 0, false
	}
	return h*60 + m, true
}

// Days are the names of the days of the week, Monday first.
var Days = []string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"}

// dayIndex returns the day's position in Days (Monday 0), or -1.
func dayIndex(d string) int {
	for i, n := range Days {
		if n == d {
			return i
		}
	}
	return -1
}

package manage

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// miscWant is the outcome a hook test expects: no error when code is "".
type miscWant struct {
	status int
	code   string
	fields []httpapi.FieldError
}

// miscHooks runs a kind's hooks in the core's order (Guard with New unset,
// then Validate and Check) on c.
func miscHooks[T any](k *Kind[T], c *Change[T]) *httpapi.Error {
	if k.Guard != nil {
		n := c.New
		c.New = nil
		err := k.Guard(c)
		c.New = n
		if err != nil {
			return err
		}
	}
	if k.Validate != nil {
		if err := k.Validate(c); err != nil {
			return err
		}
	}
	if k.Check != nil {
		return k.Check(c)
	}
	return nil
}

// miscCheck compares err with want, and makes sure the error repeats none
// of the values in sent.
func miscCheck(t *testing.T, want miscWant, err *httpapi.Error, sent ...string) {
	t.Helper()
	if want.code == "" {
		require.Nil(t, err)
		return
	}
	require.NotNil(t, err)
	require.Equal(t, want.code, err.Code)
	require.Equal(t, want.status, err.Status)
	require.Equal(t, want.fields, err.Fields)
	b, jerr := json.Marshal(err.Fields)
	require.NoError(t, jerr)
	for _, s := range sent {
		if len(s) < 4 { // shorter values may occur in any sentence
			continue
		}
		require.NotContains(t, err.Detail, s)
		require.NotContains(t, string(b), s)
	}
}

// miscFields is a shorthand for a list of field errors.
func miscFields(f ...httpapi.FieldError) []httpapi.FieldError { return f }

// groupSnap is a user with two platform accounts, a linked broker login
// and one group.
func groupSnap() *Snapshot {
	return &Snapshot{
		Connections: []protocol.Connection{
			{Name: "Sim", Accounts: []string{"Sim101", "Sim102"}},
			{Name: "Rithmic", Accounts: []string{"APEX-1"}},
		},
		Groups: []protocol.AccountGroup{
			{Meta: protocol.Meta{ID: "g1"}, Name: "Alpha", Destination: protocol.DestinationDesktop, Accounts: []string{"Sim101"}},
		},
		BrokerLinked:   true,
		BrokerAccounts: []string{"TV1", "TV2"},
	}
}

func TestGroupKindDeclaration(t *testing.T) {
	t.Parallel()
	require.Equal(t, "account-group", groupKind.Name)
	require.Equal(t, "desktop/account-groups", groupKind.Path)
	require.ElementsMatch(t, []string{"name", "destination"}, groupKind.Required)
	require.Equal(t, []string{"destination"}, groupKind.Immutable)
	require.False(t, groupKind.NeedsAgent)
	require.False(t, groupKind.Singleton)
	require.Equal(t, 50, groupKind.MaxCount)
	require.Equal(t, errcode.GroupLimitReached, groupKind.LimitCode)
	d := groupKind.Default()
	require.NotNil(t, d.Accounts)
	require.Equal(t, "g1", groupKind.Meta(&protocol.AccountGroup{Meta: protocol.Meta{ID: "g1"}}).ID)
}

func TestGroupHooks(t *testing.T) {
	t.Parallel()
	desk := protocol.DestinationDesktop
	broker := protocol.DestinationBroker
	many := make([]string, MaxGroupAccounts+1)
	for i := range many {
		many[i] = "Sim101"
	}
	full := make([]string, MaxGroupAccounts)
	for i := range full {
		full[i] = fmt.Sprintf("A%03d", i)
	}
	addFull := func(s *Snapshot) {
		s.Connections = append(s.Connections, protocol.Connection{Name: "Big", Accounts: full})
	}
	badName := miscWant{http.StatusUnprocessableEntity, errcode.ValidationFailed, miscFields(
		httpapi.FieldError{Path: "name", Code: errcode.FieldCodeStringPatternMismatch, Pattern: NamePattern})}
	tests := []struct {
		name  string
		old   *protocol.AccountGroup
		group protocol.AccountGroup
		snap  func(*Snapshot)
		want  miscWant
	}{
		{name: "valid desktop group", group: protocol.AccountGroup{Name: "Beta", Destination: desk, Accounts: []string{"Sim101", "APEX-1"}}},
		{name: "valid group without accounts", group: protocol.AccountGroup{Name: "Beta", Destination: desk}},
		{name: "valid unicode name with inner spaces", group: protocol.AccountGroup{Name: "Größe – 1", Destination: desk}},
		{name: "64-character name", group: protocol.AccountGroup{Name: strings.Repeat("é", 64), Destination: desk}},
		{name: "empty name", group: protocol.AccountGroup{Name: "", Destination: desk}, want: badName},
		{name: "65-character name", group: protocol.AccountGroup{Name: strings.Repeat("é", 65), Destination: desk}, want: badName},
		{name: "leading space", group: protocol.AccountGroup{Name: " Beta", Destination: desk}, want: badName},
		{name: "trailing space", group: protocol.AccountGroup{Name: "Beta ", Destination: desk}, want: badName},
		{name: "control character", group: protocol.AccountGroup{Name: "Be\tta", Destination: desk}, want: badName},
		{name: "unknown destination", group: protocol.AccountGroup{Name: "Beta", Destination: "mobile"},
			want: miscWant{http.StatusUnprocessableEntity, errcode.ValidationFailed, miscFields(
				httpapi.FieldError{Path: "destination", Code: errcode.FieldCodeNotAllowed, Allowed: []string{desk, broker}})}},
		{name: "200 accounts", group: protocol.AccountGroup{Name: "Beta", Destination: desk, Accounts: full}, snap: addFull},
		{name: "too many accounts", group: protocol.AccountGroup{Name: "Beta", Destination: desk, Accounts: many},
			want: miscWant{http.StatusUnprocessableEntity, errcode.ValidationFailed, miscFields(
				httpapi.FieldError{Path: "accounts", Code: errcode.FieldCodeLessThanEqual, Limit: MaxGroupAccounts})}},
		{name: "repeated account", group: protocol.AccountGroup{Name: "Beta", Destination: desk, Accounts: []string{"Sim101", "Sim102", "Sim101"}},
			want: miscWant{http.StatusUnprocessableEntity, errcode.ValidationFailed, miscFields(
				httpapi.FieldError{Path: "accounts.2", Code: errcode.FieldCodeDuplicateItem})}},
		{name: "every field at fault at once", group: protocol.AccountGroup{Name: " x", Destination: "", Accounts: []string{"a", "a"}},
			want: miscWant{http.StatusUnprocessableEntity, errcode.ValidationFailed, miscFields(
				httpapi.FieldError{Path: "name", Code: errcode.FieldCodeStringPatternMismatch, Pattern: NamePattern},
				httpapi.FieldError{Path: "destination", Code: errcode.FieldCodeNotAllowed, Allowed: []string{desk, broker}},
				httpapi.FieldError{Path: "accounts.1", Code: errcode.FieldCodeDuplicateItem})}},
		{name: "name of another group in another case", group: protocol.AccountGroup{Name: "ALPHA", Destination: desk},
			want: miscWant{http.StatusConflict, errcode.GroupNameConflict, nil}},
		{name: "own name on patch", old: &groupSnap().Groups[0],
			group: protocol.AccountGroup{Meta: protocol.Meta{ID: "g1"}, Name: "alpha", Destination: desk}},
		{name: "name of an account in another case", group: protocol.AccountGroup{Name: "sim101", Destination: desk},
			want: miscWant{http.StatusConflict, errcode.GroupNameConflict, nil}},
		{name: "name of a broker account", group: protocol.AccountGroup{Name: "tv2", Destination: desk},
			want: miscWant{http.StatusConflict, errcode.GroupNameConflict, nil}},
		{name: "unchanged name an account took later",
			old:   &protocol.AccountGroup{Meta: protocol.Meta{ID: "g2"}, Name: "Sim102", Destination: desk},
			group: protocol.AccountGroup{Meta: protocol.Meta{ID: "g2"}, Name: "Sim102", Destination: desk, Accounts: []string{"Sim101"}}},
		{name: "renamed to an account's name",
			old:   &protocol.AccountGroup{Meta: protocol.Meta{ID: "g2"}, Name: "Gamma", Destination: desk},
			group: protocol.AccountGroup{Meta: protocol.Meta{ID: "g2"}, Name: "Sim102", Destination: desk},
			want:  miscWant{http.StatusConflict, errcode.GroupNameConflict, nil}},
		{name: "desktop account not on the connections", group: protocol.AccountGroup{Name: "Beta", Destination: desk, Accounts: []string{"Sim101", "Nope", "TV1"}},
			want: miscWant{http.StatusNotFound, errcode.AccountNotFound, miscFields(
				httpapi.FieldError{Path: "accounts.1", Code: errcode.AccountNotFound},
				httpapi.FieldError{Path: "accounts.2", Code: errcode.AccountNotFound})}},
		{name: "valid tv group", group: protocol.AccountGroup{Name: "Beta", Destination: broker, Accounts: []string{"TV2", "TV1"}}},
		{name: "tv group without a linked login", group: protocol.AccountGroup{Name: "Beta", Destination: broker},
			snap: func(s *Snapshot) { s.BrokerLinked = false; s.BrokerAccounts = nil },
			want: miscWant{http.StatusConflict, errcode.TradovateNotLinked, nil}},
		{name: "tv account not of the login", group: protocol.AccountGroup{Name: "Beta", Destination: broker, Accounts: []string{"Sim101", "TV1"}},
			want: miscWant{http.StatusConflict, errcode.AccountIdentityUnresolved, miscFields(
				httpapi.FieldError{Path: "accounts.0", Code: errcode.AccountIdentityUnresolved})}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := groupSnap()
			if tt.snap != nil {
				tt.snap(s)
			}
			g := tt.group
			op := OpCreate
			if tt.old != nil {
				op = OpPatch
			}
			err := miscHooks(groupKind, &Change[protocol.AccountGroup]{Op: op, Old: tt.old, New: &g, Snap: s, Family: "desktop"})
			// The user's own accounts may be listed (account_not_found
			// lists them); nothing else sent may be repeated.
			sent := []string{tt.group.Name}
			for _, a := range tt.group.Accounts {
				if !s.HasAccount(a) {
					sent = append(sent, a)
				}
			}
			miscCheck(t, tt.want, err, sent...)
			if tt.want.code == "" {
				require.NotNil(t, g.Accounts)
			}
		})
	}
}

// TestNamePatternIsPrint proves that NamePattern accepts exactly the
// characters unicode.IsPrint does.
func TestNamePatternIsPrint(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(NamePattern)
	for r := rune(0); r <= 0x2FFFF; r++ {
		if r >= 0xD800 && r <= 0xDFFF {
			continue
		}
		inner := "a" + string(r) + "b"
		require.Equal(t, unicode.IsPrint(r), re.MatchString(inner), "rune %U inside", r)
		if r != ' ' {
			require.Equal(t, unicode.IsPrint(r), re.MatchString(string(r)), "rune %U alone", r)
		}
	}
	require.False(t, re.MatchString(" "))
}

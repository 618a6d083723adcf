package manage

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/errcode"
)

// A collection's life: create (201 with an ETag), read, list, patch
// (changed true, a new ETag), patch again with the same values
// (changed:false, nothing written), delete (200 {id, deleted:true}),
// then 404.
func TestCollectionLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.do(http.MethodPost, "/desktop/account-groups", tokElite, groupBody("Evals"))
	require.Equal(t, http.StatusCreated, r.Code, string(r.Body))
	require.Equal(t, `"1"`, r.Header.Get("ETag"))
	b := r.body(t)
	require.True(t, b.Success)
	require.Equal(t, `"1"`, b.Meta["etag"])
	require.True(t, *b.Changed)
	var g protocol.AccountGroup
	r.data(t, &g)
	require.Regexp(t, `^grp_[0-9a-f]{20}$`, g.ID)
	require.Equal(t, e.now, g.CreatedAt)
	require.Equal(t, e.now, g.UpdatedAt)

	r = e.do(http.MethodGet, "/desktop/account-groups/"+g.ID, tokElite, "")
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	require.Equal(t, `"1"`, r.Header.Get("ETag"))
	require.Nil(t, r.body(t).Changed, "reads carry no changed")

	r = e.do(http.MethodGet, "/desktop/account-groups", tokElite, "")
	require.Equal(t, http.StatusOK, r.Code)
	var list []protocol.AccountGroup
	r.data(t, &list)
	require.Len(t, list, 1)
	require.Equal(t, g.ID, list[0].ID)

	r = e.do(http.MethodPatch, "/desktop/account-groups/"+g.ID, tokElite, `{"accounts":["Sim101","Sim102"]}`)
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	require.Equal(t, `"2"`, r.Header.Get("ETag"))
	require.True(t, *r.body(t).Changed)

	writes := e.store.writeCount()
	r = e.do(http.MethodPatch, "/desktop/account-groups/"+g.ID, tokElite, `{"accounts":["Sim101","Sim102"]}`)
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	require.False(t, *r.body(t).Changed)
	require.Equal(t, `"2"`, r.Header.Get("ETag"))
	require.Equal(t, writes, e.store.writeCount(), "changed:false writes nothing")

	r = e.do(http.MethodDelete, "/desktop/account-groups/"+g.ID, tokElite, "")
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	require.JSONEq(t, `{"success":true,"data":{"id":"`+g.ID+`","deleted":true},"changed":true}`, string(r.Body))

	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		r = e.do(m, "/desktop/account-groups/"+g.ID, tokElite, "")
		require.Equal(t, http.StatusNotFound, r.Code)
		require.Equal(t, errcode.NotFound, r.code(t))
	}
}

// One user never reaches another's resources: 404, as for an id that
// does not exist.
func TestCrossUserIsolation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	id := e.createGroup(tokElite, "Mine")
	for _, tc := range []struct{ method, body string }{
		{http.MethodGet, ""},
		{http.MethodPatch, `{"accounts":[]}`},
		{http.MethodDelete, ""},
	} {
		r := e.do(tc.method, "/desktop/account-groups/"+id, tokElite2, tc.body)
		require.Equal(t, http.StatusNotFound, r.Code, tc.method)
		require.Equal(t, errcode.NotFound, r.code(t))
	}
	r := e.do(http.MethodGet, "/desktop/account-groups", tokElite2, "")
	var list []protocol.AccountGroup
	r.data(t, &list)
	require.Empty(t, list)
	_, ok := e.store.stored("u1", groupKind.Name, id)
	require.True(t, ok, "still there")
}

// Singletons exist implicitly with version 0 and ETag "0"; the first
// write makes version 1.
func TestSingletonImplicit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.do(http.MethodGet, "/controls", tokElite, "")
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	require.Equal(t, `"0"`, r.Header.Get("ETag"))
	var c protocol.Controls
	r.data(t, &c)
	require.Regexp(t, `^ctl_[0-9a-f]{20}$`, c.ID)
	require.False(t, c.KillSwitch)

	r = e.do(http.MethodPatch, "/controls", tokElite, `{"flattenOnKill":true}`, "If-Match", `"0"`)
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	require.Equal(t, `"1"`, r.Header.Get("ETag"))
	var c2 protocol.Controls
	r.data(t, &c2)
	require.Equal(t, c.ID, c2.ID, "a singleton's id does not change")
	require.True(t, c2.FlattenOnKill)
	require.Equal(t, e.now, c2.CreatedAt)

	r = e.do(http.MethodGet, "/controls", tokElite2, "")
	var other protocol.Controls
	r.data(t, &other)
	require.NotEqual(t, c.ID, other.ID, "each user's own")
	require.False(t, other.FlattenOnKill)
}

// Read-only and immutable fields: equal to the saved value they are
// ignored (a resource read can be sent back), different they are refused;
// on create read-only ones are refused whatever their value.
func TestReadOnlyAndImmutableFields(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.do(http.MethodPost, "/desktop/account-groups", tokElite, groupBody("Back"))
	require.Equal(t, http.StatusCreated, r.Code)
	var g protocol.AccountGroup
	r.data(t, &g)
	read := e.do(http.MethodGet, "/desktop/account-groups/"+g.ID, tokElite, "")
	var whole map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(read.body(t).Data, &whole))
	sent, err := json.Marshal(whole)
	require.NoError(t, err)

	r = e.do(http.MethodPatch, "/desktop/account-groups/"+g.ID, tokElite, string(sent))
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	require.False(t, *r.body(t).Changed, "the read resource sent back changes nothing")

	for _, tc := range []struct {
		name, method, path, body, code, field string
	}{
		{"id differs", http.MethodPatch, "/desktop/account-groups/" + g.ID, `{"id":"grp_00000000000000000000"}`, errcode.FieldReadOnly, "id"},
		{"createdAt differs", http.MethodPatch, "/desktop/account-groups/" + g.ID, `{"createdAt":"2020-01-01T00:00:00Z"}`, errcode.FieldReadOnly, "createdAt"},
		{"immutable differs", http.MethodPatch, "/desktop/account-groups/" + g.ID, `{"destination":"tv"}`, errcode.ImmutableField, "destination"},
		{"create with id", http.MethodPost, "/desktop/account-groups", `{"id":"` + g.ID + `","name":"X","destination":"desktop"}`, errcode.FieldReadOnly, "id"},
		{"create with updatedAt", http.MethodPost, "/desktop/account-groups", `{"updatedAt":null,"name":"X","destination":"desktop"}`, errcode.FieldReadOnly, "updatedAt"},
		{"singleton id differs", http.MethodPatch, "/controls", `{"id":"ctl_00000000000000000000"}`, errcode.FieldReadOnly, "id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, tc.path, tokElite, tc.body)
			require.Equal(t, http.StatusUnprocessableEntity, r.Code, string(r.Body))
			b := r.body(t)
			require.Equal(t, tc.code, b.Error)
			require.Len(t, b.Fields, 1)
			require.Equal(t, tc.field, b.Fields[0]["path"])
			require.Equal(t, tc.code, b.Fields[0]["code"])
		})
	}
}

// A body's shape: unknown fields (case matters) and wrong types are 422
// validation_failed naming each path; a body that is not an object is
// wrong_type at ""; a create without a required field is required.
func TestBodyShape(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	id := e.createGroup(tokElite, "Shape")
	long := make([]byte, 70)
	for i := range long {
		long[i] = 'a'
	}
	for _, tc := range []struct {
		name, method, path, body string
		fields                   []map[string]any
	}{
		{"unknown field", http.MethodPatch, "/desktop/account-groups/" + id, `{"colour":"red"}`,
			[]map[string]any{{"path": "colour", "code": errcode.FieldCodeUnknownField}}},
		{"case matters", http.MethodPatch, "/desktop/account-groups/" + id, `{"Name":"x"}`,
			[]map[string]any{{"path": "Name", "code": errcode.FieldCodeUnknownField}}},
		{"unsafe name not repeated", http.MethodPatch, "/desktop/account-groups/" + id, `{"a b":1}`,
			[]map[string]any{{"path": "", "code": errcode.FieldCodeUnknownField}}},
		{"long name not repeated", http.MethodPatch, "/desktop/account-groups/" + id, `{"` + string(long) + `":1}`,
			[]map[string]any{{"path": "", "code": errcode.FieldCodeUnknownField}}},
		{"wrong type", http.MethodPatch, "/desktop/account-groups/" + id, `{"name":5}`,
			[]map[string]any{{"path": "name", "code": errcode.FieldCodeWrongType}}},
		{"wrong type in array", http.MethodPatch, "/desktop/account-groups/" + id, `{"accounts":["Sim101",7]}`,
			[]map[string]any{{"path": "accounts.1", "code": errcode.FieldCodeWrongType}}},
		{"nested path", http.MethodPatch, "/controls", `{"flattenOnKill":"yes"}`,
			[]map[string]any{{"path": "flattenOnKill", "code": errcode.FieldCodeWrongType}}},
		{"not an object", http.MethodPatch, "/controls", `[1,2]`,
			[]map[string]any{{"path": "", "code": errcode.FieldCodeWrongType}}},
		{"a string", http.MethodPatch, "/controls", `"x"`,
			[]map[string]any{{"path": "", "code": errcode.FieldCodeWrongType}}},
		{"required", http.MethodPost, "/desktop/account-groups", `{"destination":"desktop"}`,
			[]map[string]any{{"path": "name", "code": errcode.FieldCodeRequired}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, tc.path, tokElite, tc.body)
			require.Equal(t, http.StatusUnprocessableEntity, r.Code, string(r.Body))
			b := r.body(t)
			require.Equal(t, errcode.ValidationFailed, b.Error)
			require.Equal(t, tc.fields, b.Fields)
		})
	}
}

// Arrays replace, objects merge field by field: a follower sent without
// a field does not keep the old follower's (encoding/json alone would).
func TestMergeArraysReplace(t *testing.T) {
	t.Parallel()
	base := map[string]any{"a": map[string]any{"x": 1.0, "y": 2.0}, "list": []any{map[string]any{"k": true, "v": 1.0}}}
	got := mergeJSON(base, map[string]any{"a": map[string]any{"y": 3.0}, "list": []any{map[string]any{"v": 2.0}}})
	require.Equal(t, map[string]any{"a": map[string]any{"x": 1.0, "y": 3.0}, "list": []any{map[string]any{"v": 2.0}}}, got)

	c := protocol.Copier{Followers: []protocol.Follower{{Account: "A", Inverse: true}}}
	doc, err := toDoc(c)
	require.NoError(t, err)
	patch, err := decodeBody([]byte(`{"followers":[{"account":"B"}]}`))
	require.NoError(t, err)
	n, err := fromDoc[protocol.Copier](mergeJSON(doc, patch))
	require.NoError(t, err)
	require.Equal(t, []protocol.Follower{{Account: "B"}}, n.Followers)
}

// If-Match: the current strong ETag or "*" pass; a stale or weak tag is
// 412 precondition_failed with the current ETag in the header and in
// meta.etag.
func TestIfMatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	id := e.createGroup(tokElite, "Cond")
	path := "/desktop/account-groups/" + id
	for _, tc := range []struct {
		name, tag string
		ok        bool
	}{
		{"current", `"1"`, true},
		{"star", `*`, true},
		{"list", `"7", "2"`, true},
		{"stale", `"1"`, false},
		{"weak", `W/"3"`, false},
		{"unquoted", `3`, false},
	} {
		r := e.do(http.MethodPatch, path, tokElite, `{"accounts":["Sim10`+strconv.Itoa(len(tc.name)%3+1)+`"]}`, "If-Match", tc.tag)
		if tc.ok {
			require.Less(t, r.Code, 300, tc.name+": "+string(r.Body))
			continue
		}
		require.Equal(t, http.StatusPreconditionFailed, r.Code, tc.name)
		b := r.body(t)
		require.Equal(t, errcode.PreconditionFailed, b.Error)
		cur, _ := e.store.stored("u1", groupKind.Name, id)
		require.Equal(t, etagOf(cur.Version), r.Header.Get("ETag"))
	}
}

// 412 precondition_failed carries the current ETag in meta.etag too (the
// spec's error object). This needs httpapi.WriteError to write Error.ETag
// as meta.etag.
func TestPreconditionFailedMetaETag(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.do(http.MethodPatch, "/controls", tokElite, `{"flattenOnKill":true}`, "If-Match", `"5"`, "X-Request-Id", "req-1")
	require.Equal(t, http.StatusPreconditionFailed, r.Code)
	require.Equal(t, `"0"`, r.Header.Get("ETag"))
	require.Equal(t, `"0"`, r.body(t).Meta["etag"])
}

// 50 concurrent PATCHes with the same If-Match: exactly one succeeds; the
// others are 412, or 429 (in-flight limit, budgets).
func TestConcurrentPatchesOneWins(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	id := e.createGroup(tokElite, "Race")
	var wg sync.WaitGroup
	codes := make([]int, 50)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := `{"name":"Race` + strconv.Itoa(i) + `"}`
			codes[i] = e.do(http.MethodPatch, "/desktop/account-groups/"+id, tokElite, body, "If-Match", `"1"`).Code
		}()
	}
	wg.Wait()
	wins := 0
	for _, c := range codes {
		switch c {
		case http.StatusOK:
			wins++
		case http.StatusPreconditionFailed, http.StatusTooManyRequests:
		default:
			t.Fatalf("unexpected status %d", c)
		}
	}
	require.Equal(t, 1, wins)
}

// A version conflict in the store (another relay node wrote first) is 409
// concurrent_modification with retryAfter 1; a store that fails is 503
// storage_unavailable and nothing is applied or pushed.
func TestStoreFailures(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.store.conflicts = 1
	r := e.do(http.MethodPatch, "/controls", tokElite, `{"flattenOnKill":true}`)
	require.Equal(t, http.StatusConflict, r.Code, string(r.Body))
	b := r.body(t)
	require.Equal(t, errcode.ConcurrentModification, b.Error)
	require.Equal(t, 1, b.RetryAfter)
	require.Equal(t, "1", r.Header.Get("Retry-After"))

	e.store.mu.Lock()
	e.store.failWrite = errFake
	e.store.mu.Unlock()
	r = e.do(http.MethodPatch, "/controls", tokElite, `{"flattenOnKill":true}`)
	require.Equal(t, http.StatusServiceUnavailable, r.Code)
	require.Equal(t, errcode.StorageUnavailable, r.code(t))
	require.Empty(t, e.hub.pushes("u1"), "nothing pushed")

	e.store.mu.Lock()
	e.store.failWrite, e.store.failRead = nil, errFake
	e.store.mu.Unlock()
	for _, m := range []string{http.MethodGet, http.MethodPatch} {
		body := ""
		if m == http.MethodPatch {
			body = `{"flattenOnKill":true}`
		}
		r = e.do(m, "/controls", tokElite, body)
		require.Equal(t, http.StatusServiceUnavailable, r.Code, m)
		require.Equal(t, errcode.StorageUnavailable, r.code(t))
	}
	_, ok := e.store.stored("u1", controlsKind.Name, singletonID("u1", controlsKind.Name))
	require.False(t, ok, "nothing applied")
}

var errFake = errFakeT("store down")

type errFakeT string

func (e errFakeT) Error() string { return string(e) }

// MaxCount: a create past the kind's bound is 409 with the kind's code
// (group_limit_reached for groups, limit_reached by default).
func TestMaxCount(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for i := range groupKind.MaxCount {
		id := newID(groupKind.Name)
		body := `{"id":"` + id + `","name":"G` + strconv.Itoa(i) + `","destination":"desktop","accounts":[]}`
		_, err := e.store.WriteResources(t.Context(), "u1", false, storeWrite(groupKind.Name, id, body, 0))
		require.NoError(t, err)
	}
	r := e.do(http.MethodPost, "/desktop/account-groups", tokElite, groupBody("OneTooMany"))
	require.Equal(t, http.StatusConflict, r.Code, string(r.Body))
	require.Equal(t, errcode.GroupLimitReached, r.code(t))
	require.Equal(t, http.StatusCreated, e.do(http.MethodPost, "/desktop/account-groups", tokElite2, groupBody("Other")).Code)

	k := *groupKind
	k.MaxCount, k.LimitCode, k.Check, k.Validate = 1, "", nil, nil
	st := &state{userID: "u1", versions: map[resKey]int64{}}
	st.snap.Groups = []protocol.AccountGroup{{}}
	_, herr := k.change(&changeIn{op: OpCreate, body: []byte(`{"name":"x","destination":"desktop"}`), st: st, header: http.Header{}})
	require.NotNil(t, herr)
	require.Equal(t, errcode.LimitReached, herr.Code)
	require.Equal(t, http.StatusConflict, herr.Status)
}

// A body that does not arrive within BodyTimeout is 408 body_timeout
// (over a real connection: the read deadline is the server's).
func TestBodyTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.BodyTimeout = 100 * time.Millisecond })
	srv := httptest.NewServer(e.mux)
	defer srv.Close()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "PATCH "+Prefix+"/controls HTTP/1.1\r\nHost: relay\r\nAuthorization: Bearer "+tokElite+
		"\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{\"flattenOnKill\":")
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(testkit.Medium)))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
	var b errBody
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&b))
	require.Equal(t, errcode.BodyTimeout, b.Error)
}

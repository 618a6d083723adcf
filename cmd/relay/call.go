package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// relayCall is one request of a command to a running relay (its API or
// operator listener), answered with the relay's envelope.
type relayCall struct {
	Method string
	Base   string // "http://127.0.0.1:8080" or "127.0.0.1:8080"
	Path   string
	Token  string // sent as Authorization: Bearer when set
	Body   io.Reader
	// Timeout bounds the whole call; Limit the answer read.
	Timeout time.Duration
	Limit   int64
	// Name names the listener in errors; default "the relay".
	Name string
}

// answerError is a relay's answer other than 200: its status, code and
// sentence.
type answerError struct {
	Status       int
	Code, Detail string
}

func (e *answerError) Error() string {
	return fmt.Sprintf("%s: %s (HTTP %d)", e.Code, e.Detail, e.Status)
}

// do sends the call and returns the data of a 200 answer, an
// *answerError for any other, or the error that kept it from being
// answered in JSON.
func (c relayCall) do(ctx context.Context) (json.RawMessage, error) {
	name := c.Name
	if name == "" {
		name = "the relay"
	}
	base := c.Base
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, c.Method, strings.TrimRight(base, "/")+c.Path, c.Body)
	if err != nil {
		return nil, fmt.Errorf("the address of %s: %w", name, err)
	}
	if c.Body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("calling %s: %w", name, err)
	}
	defer resp.Body.Close()
	var out struct {
		Data   json.RawMessage `json:"data"`
		Error  string          `json:"error"`
		Detail string          `json:"detail"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, c.Limit)).Decode(&out); err != nil {
		return nil, fmt.Errorf("%s answered %d without JSON", name, resp.StatusCode)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &answerError{Status: resp.StatusCode, Code: out.Error, Detail: out.Detail}
	}
	return out.Data, nil
}

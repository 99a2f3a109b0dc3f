package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/coder/websocket"
)

// target is one entry of Chromium's /json/list.
type target struct {
	ID    string `json:"id"`
	Type  string `json:"type"`
	URL   string `json:"url"`
	WSURL string `json:"webSocketDebuggerUrl"`
}

// pageTargets lists the page targets of the Chromium at httpURL, through its
// own HTTP endpoint: what is really open, whatever the tool says.
func pageTargets(ctx context.Context, httpURL string) (map[string]target, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, httpURL+"/json/list", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	var ts []target
	if err := json.NewDecoder(resp.Body).Decode(&ts); err != nil {
		return nil, err
	}
	out := map[string]target{}
	for _, t := range ts {
		if t.Type == "page" {
			out[t.ID] = t
		}
	}
	return out, nil
}

// evaluate runs expr in the page of t through a raw DevTools connection of its
// own and returns its value as JSON.
func evaluate(ctx context.Context, t target, expr string) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, t.WSURL, nil)
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.CloseNow() }()
	c.SetReadLimit(1 << 24)
	msg, _ := json.Marshal(map[string]any{"id": 1, "method": "Runtime.evaluate",
		"params": map[string]any{"expression": expr, "returnByValue": true}})
	if err := c.Write(ctx, websocket.MessageText, msg); err != nil {
		return nil, err
	}
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			return nil, err
		}
		var r struct {
			ID     int `json:"id"`
			Result struct {
				Result struct {
					Value json.RawMessage `json:"value"`
				} `json:"result"`
				ExceptionDetails any `json:"exceptionDetails"`
			} `json:"result"`
			Error *struct{ Message string } `json:"error"`
		}
		if json.Unmarshal(b, &r) != nil || r.ID != 1 {
			continue
		}
		if r.Error != nil {
			return nil, fmt.Errorf("evaluating in the page: %s", r.Error.Message)
		}
		if r.Result.ExceptionDetails != nil {
			return nil, fmt.Errorf("evaluating in the page: exception %v", r.Result.ExceptionDetails)
		}
		return r.Result.Result.Value, nil
	}
}

package opencode

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Prompt delivery, as the reference recorder does it: up to 3 attempts,
// 2 s apart, each verified by finding the user message in the session.
const (
	DefaultPromptAttempts = 3
	DefaultPromptInterval = 2 * time.Second
)

// idGen makes OpenCode-style ascending ids: prefix_ + 12 hex digits of
// (Unix ms × 0x1000 + counter) truncated to 48 bits + 14 random base62
// characters. OpenCode sorts messages by id, so a new user message must
// sort after the session's earlier messages: time-based ids do.
type idGen struct {
	mu      sync.Mutex
	lastMS  int64
	counter int64
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

func (g *idGen) next(prefix string, now time.Time) string {
	g.mu.Lock()
	ms := now.UnixMilli()
	if ms != g.lastMS {
		g.lastMS, g.counter = ms, 0
	}
	g.counter++
	v := uint64(ms*0x1000+g.counter) & (1<<48 - 1)
	g.mu.Unlock()
	var ts [6]byte
	for i := range ts {
		ts[i] = byte(v >> (40 - 8*i))
	}
	var rnd [14]byte
	_, _ = rand.Read(rnd[:])
	for i, b := range rnd {
		rnd[i] = base62[int(b)%62]
	}
	return prefix + "_" + hex.EncodeToString(ts[:]) + string(rnd[:])
}

// NewMessageID returns a fresh user-message id (msg_…) for a Prompt.
func (c *Client) NewMessageID() string { return c.ids.next("msg", time.Now()) }

// SendPrompt delivers p reliably and returns the user message's id. It
// gives p a message id (unless set), posts it with prompt_async, and
// checks that the message appears in the session; if not within the
// interval it posts again, up to the attempt limit. Before re-posting (and
// before the first post when the caller chose the id) it checks once more,
// so a prompt that landed late, or is sent again with the same id, is
// never delivered twice.
// A 4xx answer other than 404 is final (the request itself is wrong).
func (c *Client) SendPrompt(ctx context.Context, sessionID string, p Prompt) (string, error) {
	given := p.MessageID != ""
	if !given {
		p.MessageID = c.NewMessageID()
	}
	attempts, interval := c.promptAttempts, c.promptInterval
	var lastErr error
	for attempt := 1; attempt <= attempts; attempt++ {
		if attempt > 1 || given {
			if ok, _ := c.delivered(ctx, sessionID, p.MessageID); ok {
				return p.MessageID, nil
			}
		}
		err := c.PromptAsync(ctx, sessionID, p)
		var apiErr *APIError
		if errors.As(err, &apiErr) && apiErr.Status/100 == 4 && apiErr.Status != 404 && apiErr.Status != 408 && apiErr.Status != 429 {
			return "", fmt.Errorf("send prompt: %w", err)
		}
		if err != nil {
			lastErr = err
		}
		deadline := time.Now().Add(interval)
		for {
			ok, err := c.delivered(ctx, sessionID, p.MessageID)
			if ok {
				return p.MessageID, nil
			}
			if err != nil {
				lastErr = err
			}
			if ctx.Err() != nil {
				return "", fmt.Errorf("send prompt: %w", ctx.Err())
			}
			if time.Now().After(deadline) {
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(150 * time.Millisecond):
			}
		}
	}
	if lastErr == nil {
		lastErr = errors.New("the user message never appeared")
	}
	return "", fmt.Errorf("send prompt to %s: not delivered after %d attempts: %w", sessionID, attempts, lastErr)
}

// delivered reports whether the session holds user message id.
func (c *Client) delivered(ctx context.Context, sessionID, id string) (bool, error) {
	m, err := c.Message(ctx, sessionID, id)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return m.Info.Role == "user", nil
}

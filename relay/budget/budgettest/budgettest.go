// Package budgettest gives tests a Redis to keep budgets in (package
// relay/budget's Redis backend): the server the TB_TEST_REDIS environment
// variable names, under a key prefix no other test uses, cleaned when the
// test ends. Tests that need it skip when the variable is unset.
package budgettest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// EnvRedis names the Redis the tests run against, e.g.
// redis://127.0.0.1:6379/0.
const EnvRedis = "TB_TEST_REDIS"

// RedisURL returns $TB_TEST_REDIS, or skips t when it is unset.
func RedisURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvRedis)
	if u == "" {
		t.Skip(EnvRedis + " is unset (e.g. redis://127.0.0.1:6379/0): budgets and leases in Redis are not tested")
	}
	return u
}

// Prefix returns a key prefix of t's own on the Redis at url, so that
// tests running at once on one server never meet, and a plain client for
// inspecting its keys. When t ends the keys under the prefix are deleted
// and the client closed.
func Prefix(t testing.TB, url string) (string, *redis.Client) {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	pfx := "tbtest:" + hex.EncodeToString(b[:]) + ":"
	o, err := redis.ParseURL(url)
	require.NoError(t, err)
	c := redis.NewClient(o)
	t.Cleanup(func() {
		ctx := context.Background()
		var keys []string
		iter := c.Scan(ctx, 0, pfx+"*", 100).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if len(keys) > 0 {
			c.Del(ctx, keys...)
		}
		c.Close()
	})
	return pfx, c
}

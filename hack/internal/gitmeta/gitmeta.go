// Package gitmeta reads what the release tools (hack/image,
// hack/plugin-dist) say of the git tree they build from: its commit and
// the time every timestamp they write takes, so that a commit always
// gives the same artifacts.
package gitmeta

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Git runs git in dir and returns its trimmed output.
func Git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...) //nolint:gosec // the release tools' own git queries
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Created is $SOURCE_DATE_EPOCH, else the time of the commit at HEAD of
// the tree at dir: the one time the release tools write.
func Created(ctx context.Context, dir string) (time.Time, error) {
	epoch := os.Getenv("SOURCE_DATE_EPOCH")
	if epoch == "" {
		var err error
		if epoch, err = Git(ctx, dir, "log", "-1", "--format=%ct"); err != nil {
			return time.Time{}, err
		}
	}
	seconds, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("parsing SOURCE_DATE_EPOCH %q: %w", epoch, err)
	}
	return time.Unix(seconds, 0).UTC(), nil
}

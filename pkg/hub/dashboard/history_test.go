package dashboard

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"":                     now.Add(-7 * 24 * time.Hour),
		"7d":                   now.AddDate(0, 0, -7),
		"0d":                   now,
		"36h":                  now.Add(-36 * time.Hour),
		"2026-11-01T00:00:00Z": time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
	} {
		got, err := ParseSince(in, now)
		NewWithT(t).Expect(err).NotTo(HaveOccurred(), in)
		NewWithT(t).Expect(got).To(Equal(want), in)
	}
	for _, in := range []string{"yesterday", "-3d", "-1h", "d", "2026-11-01"} {
		_, err := ParseSince(in, now)
		NewWithT(t).Expect(err).To(HaveOccurred(), in)
	}
}

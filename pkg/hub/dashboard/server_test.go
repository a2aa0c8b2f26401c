package dashboard

import (
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"
)

func TestGuardHost(t *testing.T) {
	s := &Server{AllowedHosts: []string{"canopy.example.com"}}
	h := s.guardHost(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	for host, want := range map[string]int{
		"localhost:8090":         http.StatusTeapot,
		"LOCALHOST":              http.StatusTeapot,
		"127.0.0.1:8090":         http.StatusTeapot,
		"[::1]:8090":             http.StatusTeapot,
		"10.0.0.7":               http.StatusTeapot,
		"hub.localhost:8090":     http.StatusTeapot,
		"canopy.example.com:443": http.StatusTeapot,
		"evil.example.com:8090":  http.StatusForbidden,
		"evil.example.com.":      http.StatusForbidden,
		"localhost.evil.example": http.StatusForbidden,
		"127.0.0.1.nip.io:8090":  http.StatusForbidden,
		"":                       http.StatusForbidden,
	} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		NewWithT(t).Expect(rec.Code).To(Equal(want), "Host %q", host)
	}
}

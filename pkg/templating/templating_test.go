package templating

import (
	"io"
	"os"
	"testing"

	. "github.com/onsi/gomega"
	klogv1 "k8s.io/klog"
)

func TestQuietLibraryLog(t *testing.T) {
	g := NewWithT(t)
	r, w, err := os.Pipe()
	g.Expect(err).NotTo(HaveOccurred())
	stderr := os.Stderr
	os.Stderr = w
	QuietLibraryLog()
	klogv1.Errorf("template str %s", "s3cr3t")
	klogv1.Flush()
	os.Stderr = stderr
	g.Expect(w.Close()).To(Succeed())
	out, err := io.ReadAll(r)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out)).NotTo(ContainSubstring("s3cr3t"))
}

func TestHasTemplate(t *testing.T) {
	g := NewWithT(t)
	g.Expect(HasHubTemplate([]byte(`{"a":"{{hub .ManagedClusterName hub}}"}`))).To(BeTrue())
	g.Expect(HasHubTemplate([]byte(`{"a":"{{ .ObjectName }}"}`))).To(BeFalse())
	g.Expect(HasManagedTemplate([]byte(`{"a":"{{ .ObjectName }}"}`))).To(BeTrue())
	g.Expect(HasManagedTemplate([]byte(`{"a":"$ocm_encrypted:abc"}`))).To(BeTrue())
	g.Expect(HasManagedTemplate([]byte(`{"a":"plain"}`))).To(BeFalse())
}

package operatorpolicy

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// checkDeprecations sets NoDeprecations for a musthave policy from the
// PackageManifest: the package, else the subscribed channel, else the
// installed bundle (csv) is deprecated, or none is. As in OCM, the
// condition is left as it is when there is no PackageManifest, and when
// the channel is not deprecated and no CSV is installed yet.
func (e *evaluation) checkDeprecations(sub, csv *unstructured.Unstructured) error {
	pm := e.packageManifest
	if !e.musthave() || sub == nil || pm == nil {
		return nil
	}
	pkg, ok, err := unstructured.NestedString(pm.Object, "status", "packageName")
	if err != nil || !ok {
		return fmt.Errorf("failed to get packageName in the PackageManifest %q", pm.GetName())
	}
	if dep, ok, _ := unstructured.NestedMap(pm.Object, "status", "deprecation"); ok {
		msg, _, _ := unstructured.NestedString(dep, "message")
		e.set(deprecationCond(pkg, deprecatedPackage, msg))
		return nil
	}
	channel, err := selectedChannel(pm, sub)
	if err != nil {
		return err
	}
	channels, ok, err := unstructured.NestedSlice(pm.Object, "status", "channels")
	if err != nil || !ok {
		return fmt.Errorf("failed to retrieve channels in PackageManifest %q", pm.GetName())
	}
	for _, c := range channels {
		m, ok := c.(map[string]any)
		if !ok {
			return fmt.Errorf("failed to parse channel in PackageManifest %q", pm.GetName())
		}
		if name, _ := m["name"].(string); name != channel {
			continue
		}
		if dep, ok := m["deprecation"].(map[string]any); ok {
			msg, _, _ := unstructured.NestedString(dep, "message")
			e.set(deprecationCond(channel, deprecatedChannel, msg))
			return nil
		}
		if csv == nil {
			return nil
		}
		entries, ok, err := unstructured.NestedSlice(m, "entries")
		if err != nil || !ok {
			return fmt.Errorf("failed to parse entries in channel %q of PackageManifest %q", channel, pm.GetName())
		}
		for _, entry := range entries {
			em, _ := entry.(map[string]any)
			if name, _ := em["name"].(string); name != csv.GetName() {
				continue
			}
			if dep, ok := em["deprecation"].(map[string]any); ok {
				msg, _, _ := unstructured.NestedString(dep, "message")
				e.set(deprecationCond(csv.GetName(), deprecatedBundle, msg))
				return nil
			}
		}
	}
	e.set(noDeprecationsCond)
	return nil
}

// checkMinorChannel sets MinorChannelUpgradeAvailable: whether the
// PackageManifest has a newer minor-version channel than the subscribed
// one, checked only for a musthave policy that approves upgrades
// automatically.
func (e *evaluation) checkMinorChannel(sub *unstructured.Unstructured) error {
	pm := e.packageManifest
	if !e.musthave() || e.policy.Spec.UpgradeApproval != "Automatic" || sub == nil || pm == nil {
		e.set(minorChannelOKCond("Skipped", "skipping check for minor channel upgrades"))
		return nil
	}
	channel, err := selectedChannel(pm, sub)
	if err != nil {
		return err
	}
	channels, ok, err := unstructured.NestedSlice(pm.Object, "status", "channels")
	if err != nil || !ok {
		return fmt.Errorf("failed to retrieve channels in PackageManifest %q", pm.GetName())
	}
	var names []string
	for _, c := range channels {
		if m, ok := c.(map[string]any); ok {
			if name, ok := m["name"].(string); ok {
				names = append(names, name)
			}
		}
	}
	next := nextMinorChannels(names, channel)
	if len(next) == 0 {
		e.set(minorChannelOKCond("Recommended", "the subscription is on the recommended channel"))
		return nil
	}
	e.set(minorChannelUpgradeCond(e.policy.Spec.ComplianceConfig.MinorChannelUpgradeAvailable, next))
	return nil
}

// selectedChannel is the Subscription's channel, else the package's
// default one.
func selectedChannel(pm, sub *unstructured.Unstructured) (string, error) {
	if channel, _, _ := unstructured.NestedString(sub.Object, "spec", "channel"); channel != "" {
		return channel, nil
	}
	channel, ok, err := unstructured.NestedString(pm.Object, "status", "defaultChannel")
	if err != nil || !ok {
		return "", errors.New("the default channel could not be determined because the PackageManifest didn't specify one")
	}
	return channel, nil
}

// minorChannel is OCM's pattern of a channel named after a minor version:
// a prefix, the major and minor versions, and ".x" or nothing
// ("stable-4.16", "v1.2.x").
var minorChannel = regexp.MustCompile(`^([a-zA-Z-]*)(\d+)\.(\d+)(\.x)?$`)

// nextMinorChannels are the channels of the same prefix, major version and
// suffix as selected but of a higher minor version, sorted; none when
// selected is not named after a minor version.
func nextMinorChannels(channels []string, selected string) []string {
	m := minorChannel.FindStringSubmatch(selected)
	if m == nil {
		return nil
	}
	minor, err := strconv.Atoi(m[3])
	if err != nil {
		return nil
	}
	same := regexp.MustCompile(`^` + regexp.QuoteMeta(m[1]) + regexp.QuoteMeta(m[2]) + `\.(\d+)` + regexp.QuoteMeta(m[4]) + `$`)
	var next []string
	for _, name := range channels {
		n := same.FindStringSubmatch(name)
		if n == nil {
			continue
		}
		if v, err := strconv.Atoi(n[1]); err == nil && v > minor {
			next = append(next, name)
		}
	}
	slices.Sort(next)
	return next
}

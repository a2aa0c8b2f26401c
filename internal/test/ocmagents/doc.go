// Package ocmagents runs OCM's own components against a testenv.Env, until
// its Stop, so that clusters join and addons install the way they do on a
// real OCM hub:
//
//   - on the hub: kube-controller-manager with its certificate signing and
//     garbage collector (StartControllerManager), OCM's registration
//     controller (StartRegistrationController), its placement controller
//     (StartPlacementController) and its addon conversion webhook
//     (StartAddonWebhook);
//   - on each managed cluster: OCM's registration agent, which joins from a
//     bootstrap token as `clusteradm join` does, and its work agent with the
//     identity the hub issued (Join; Accept does what `clusteradm accept`
//     does); an addon's hub credential, which the registration agent asks
//     for by CertificateSigningRequest, written out as a kubelet mounts it
//     (AddonCredential).
//
// They run as processes of OCM's own binaries, which
// hack/install-ocm-binaries.sh (make ocm-assets) builds into bin/ocm/<Version>
// outside Canopy's module (AssetsEnv overrides the directory), and of
// kube-controller-manager from bin/k8s: linking OCM would tie Canopy's
// Kubernetes and controller-runtime versions to OCM's (its openshift/api and
// library-go). Each process logs to env.Dir/logs/<component>.log, not to the
// test's output; it stops on env.Stop and dies with the test process.
//
//	env, err := testenv.Start(ctx, testenv.Options{Unregistered: true})
//	...
//	if err := ocmagents.StartControllerManager(ctx, env); err != nil { ... }
//	if err := ocmagents.StartRegistrationController(ctx, env, ocmagents.RegistrationOptions{}); err != nil { ... }
//	if _, err := ocmagents.Join(ctx, env, env.Cluster("cluster1"), true); err != nil { ... }
//
// test/inproc's JoinFleet does all of it for every cluster of an Env, with
// Canopy's addon enabled. StartWorkAgent runs a work agent for a cluster
// registered with testenv's RegisterCluster instead.
package ocmagents

// Package helm tests the gw chart in deploy/helm/gw: helm lint, helm
// template (through Helm's own Go packages, the code the helm CLI runs),
// and a check of every rendered manifest against the Kubernetes API types.
package helm

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

const chartDir = "gw"

// kubeVersion is the oldest Kubernetes the chart supports (Chart.yaml's
// kubeVersion); rendering for it checks the constraint too.
var kubeVersion = &chartutil.KubeVersion{Version: "v1.25.0", Major: "1", Minor: "25"}

// full turns on every optional part.
const full = `
replicaCount: 3
config:
  kind: Secret
  resources: |
    _format_version: "1"
    models: []
status: {enabled: true, port: 9191}
admin:
  enabled: true
  keySecret: {name: gw-admin, key: key}
  store: etcd
  gateway: {enabled: true}
etcd: {endpoints: ["http://etcd-0.etcd:2379", "http://etcd-1.etcd:2379"], prefix: /gw/prod}
redis: {address: "redis-master:6379", db: 2, passwordSecret: {name: gw-redis, key: password}}
serviceMonitor: {enabled: true, labels: {release: prom}}
autoscaling: {enabled: true, minReplicas: 3, maxReplicas: 12}
env:
  - name: OPENAI_API_KEY
    valueFrom: {secretKeyRef: {name: gw-provider-keys, key: openai}}
`

func TestLint(t *testing.T) {
	for _, tc := range []struct{ name, values string }{{"defaults", ""}, {"full", full}} {
		t.Run(tc.name, func(t *testing.T) {
			l := lint.AllWithKubeVersion(chartDir, values(t, tc.values), "gw", kubeVersion)
			for _, m := range l.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("helm lint: %s", m)
				} else {
					t.Logf("helm lint: %s", m)
				}
			}
		})
	}
}

// TestTemplate renders the chart with the defaults and with every option on,
// decodes each manifest strictly into its API type (an unknown or mistyped
// field fails, as kubeconform's schemas would) and checks what the chart
// promises: probes, ports, non-root read-only pods, config mount and
// checksum, optional Services, ServiceMonitor, HPA, Redis and etcd settings.
func TestTemplate(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		objs := render(t, "")
		if got := kinds(objs); got != "ConfigMap Deployment Service Service" {
			t.Fatalf("kinds %q", got)
		}
		d := objs["Deployment/gw"].(*appsv1.Deployment)
		c := d.Spec.Template.Spec.Containers[0]
		if *d.Spec.Replicas != 2 || c.Image != "gw:0.1.0" || strings.Join(c.Args, " ") != "serve --resources-file /etc/gw/gw.yaml" {
			t.Fatalf("replicas %d image %s args %q", *d.Spec.Replicas, c.Image, c.Args)
		}
		probe(t, c.LivenessProbe, "/livez", "status")
		probe(t, c.ReadinessProbe, "/readyz", "status")
		probe(t, c.StartupProbe, "/livez", "status")
		envIs(t, c, "GW_LISTEN", "0.0.0.0:8080")
		envIs(t, c, "GW_STATUS_LISTEN", "0.0.0.0:9090")
		envAbsent(t, c, "GW_ADMIN_LISTEN", "GW_REDIS_ADDR", "GW_ETCD_ENDPOINTS")
		ps := d.Spec.Template.Spec.SecurityContext
		cs := c.SecurityContext
		if !*ps.RunAsNonRoot || *ps.RunAsUser != 65532 || !*cs.ReadOnlyRootFilesystem || *cs.AllowPrivilegeEscalation || cs.Capabilities.Drop[0] != "ALL" {
			t.Fatalf("security contexts %+v %+v", ps, cs)
		}
		if d.Spec.Template.Spec.AutomountServiceAccountToken == nil || *d.Spec.Template.Spec.AutomountServiceAccountToken {
			t.Fatal("the service account token must not be mounted")
		}
		mounts := map[string]string{}
		for _, m := range c.VolumeMounts {
			mounts[m.Name] = m.MountPath
		}
		if mounts["config"] != "/etc/gw" || mounts["tmp"] != "/tmp" {
			t.Fatalf("mounts %v", mounts)
		}
		cm := objs["ConfigMap/gw-config"].(*corev1.ConfigMap)
		if !strings.Contains(cm.Data["gw.yaml"], `_format_version: "1"`) {
			t.Fatalf("gw.yaml %q", cm.Data["gw.yaml"])
		}
		if d.Spec.Template.Annotations["checksum/config"] == "" {
			t.Fatal("no checksum/config annotation: a changed file would not roll the pods")
		}
		if objs["Service/gw"].(*corev1.Service).Spec.Ports[0].Port != 8080 || objs["Service/gw-status"].(*corev1.Service).Spec.Ports[0].Port != 9090 {
			t.Fatal("service ports")
		}
	})

	t.Run("full", func(t *testing.T) {
		objs := render(t, full)
		if got := kinds(objs); got != "Deployment HorizontalPodAutoscaler Secret Service Service Service Service ServiceMonitor" {
			t.Fatalf("kinds %q", got)
		}
		d := objs["Deployment/gw"].(*appsv1.Deployment)
		if d.Spec.Replicas != nil {
			t.Fatal("with autoscaling the HPA owns replicas; the Deployment must not set them")
		}
		c := d.Spec.Template.Spec.Containers[0]
		envIs(t, c, "GW_STATUS_LISTEN", "0.0.0.0:9191")
		envIs(t, c, "GW_ADMIN_LISTEN", "0.0.0.0:9180")
		envIs(t, c, "GW_GATEWAY_LISTEN", "0.0.0.0:9080")
		envIs(t, c, "GW_STORE", "etcd")
		envIs(t, c, "GW_ETCD_ENDPOINTS", "http://etcd-0.etcd:2379,http://etcd-1.etcd:2379")
		envIs(t, c, "GW_ETCD_PREFIX", "/gw/prod")
		envIs(t, c, "GW_REDIS_ADDR", "redis-master:6379")
		envIs(t, c, "GW_REDIS_DB", "2")
		envFromSecret(t, c, "GW_REDIS_PASSWORD", "gw-redis", "password")
		envFromSecret(t, c, "GW_ADMIN_KEY", "gw-admin", "key")
		envFromSecret(t, c, "OPENAI_API_KEY", "gw-provider-keys", "openai")
		probe(t, c.ReadinessProbe, "/readyz", "status")
		s := objs["Secret/gw-config"].(*corev1.Secret)
		if !strings.Contains(s.StringData["gw.yaml"], "models: []") || d.Spec.Template.Spec.Volumes[0].Secret == nil {
			t.Fatalf("config Secret %v, volume %+v", s.StringData, d.Spec.Template.Spec.Volumes[0])
		}
		for name, port := range map[string]int32{"gw": 8080, "gw-status": 9191, "gw-admin": 9180, "gw-gateway": 9080} {
			if got := objs["Service/"+name].(*corev1.Service).Spec.Ports[0].Port; got != port {
				t.Errorf("Service %s port %d; want %d", name, got, port)
			}
		}
		sm := objs["ServiceMonitor/gw"].(*monitoringv1.ServiceMonitor)
		if sm.Spec.Endpoints[0].Port != "status" || sm.Spec.Endpoints[0].Path != "/metrics" || sm.Labels["release"] != "prom" ||
			sm.Spec.Selector.MatchLabels["app.kubernetes.io/component"] != "status" {
			t.Fatalf("ServiceMonitor %+v", sm.Spec)
		}
		// The monitor selects the status Service and nothing else.
		for key, o := range objs {
			if svc, ok := o.(*corev1.Service); ok && matches(sm.Spec.Selector.MatchLabels, svc.Labels) != (key == "Service/gw-status") {
				t.Errorf("ServiceMonitor selector and %s disagree", key)
			}
		}
		hpa := objs["HorizontalPodAutoscaler/gw"].(*autoscalingv2.HorizontalPodAutoscaler)
		if hpa.Spec.MaxReplicas != 12 || *hpa.Spec.MinReplicas != 3 || hpa.Spec.ScaleTargetRef.Name != "gw" {
			t.Fatalf("HPA %+v", hpa.Spec)
		}
	})

	t.Run("status on the proxy port", func(t *testing.T) {
		objs := render(t, "status: {enabled: false}\nserviceMonitor: {enabled: true}\n")
		c := objs["Deployment/gw"].(*appsv1.Deployment).Spec.Template.Spec.Containers[0]
		probe(t, c.LivenessProbe, "/livez", "proxy")
		envAbsent(t, c, "GW_STATUS_LISTEN")
		if _, ok := objs["Service/gw-status"]; ok {
			t.Fatal("status Service rendered with status disabled")
		}
		if sm := objs["ServiceMonitor/gw"].(*monitoringv1.ServiceMonitor); sm.Spec.Endpoints[0].Port != "proxy" {
			t.Fatalf("ServiceMonitor port %q", sm.Spec.Endpoints[0].Port)
		}
	})

	t.Run("embedded admin store", func(t *testing.T) {
		objs := render(t, "replicaCount: 1\nadmin: {enabled: true, keySecret: {name: k}, persistentVolumeClaim: gw-data}\n")
		spec := objs["Deployment/gw"].(*appsv1.Deployment).Spec.Template.Spec
		envIs(t, spec.Containers[0], "GW_STORE", "embedded")
		envIs(t, spec.Containers[0], "GW_DATA_DIR", "/var/lib/gw")
		envIs(t, spec.Containers[0], "GW_GATEWAY_LISTEN", "")
		var claim string
		for _, v := range spec.Volumes {
			if v.Name == "data" && v.PersistentVolumeClaim != nil {
				claim = v.PersistentVolumeClaim.ClaimName
			}
		}
		if claim != "gw-data" {
			t.Fatalf("data volume claim %q", claim)
		}
	})

	t.Run("existing config", func(t *testing.T) {
		objs := render(t, "config: {existingName: my-gw-file}\n")
		d := objs["Deployment/gw"].(*appsv1.Deployment)
		if _, ok := objs["ConfigMap/gw-config"]; ok || d.Spec.Template.Spec.Volumes[0].ConfigMap.Name != "my-gw-file" {
			t.Fatal("existingName must mount that ConfigMap and render none")
		}
		if _, ok := d.Spec.Template.Annotations["checksum/config"]; ok {
			t.Fatal("a checksum of a file the chart does not render would never change")
		}
	})
}

// TestReloadChecksum: editing the resource file changes the pod template
// (so helm upgrade rolls the pods); reload none leaves it alone.
func TestReloadChecksum(t *testing.T) {
	sum := func(v string) string {
		return render(t, v)["Deployment/gw"].(*appsv1.Deployment).Spec.Template.Annotations["checksum/config"]
	}
	a := sum("")
	b := sum("config:\n  resources: |\n    _format_version: \"1\"\n    models: []\n")
	if a == "" || b == "" || a == b {
		t.Fatalf("checksums %q and %q", a, b)
	}
	if a != sum("") {
		t.Fatal("the checksum must be stable for the same file")
	}
	if got := sum("reload: none\n"); got != "" {
		t.Fatalf("reload none still annotates %q", got)
	}
}

// TestValuesRejected: the schema and the chart's own checks refuse values
// that would deploy something broken or silently ignore a setting.
func TestValuesRejected(t *testing.T) {
	for _, tc := range []struct{ name, values, want string }{
		{"misspelt key", "replicaCont: 3\n", "replicaCont"},
		{"unknown config kind", "config: {kind: File}\n", "/config/kind"},
		{"bad port", "service: {port: 70000}\n", "/service/port"},
		{"bad reload", "reload: sighup\n", "reload"},
		{"etcd endpoint scheme", "etcd: {endpoints: [etcd:2379]}\n", "/etcd/endpoints/0"},
		{"admin without key", "replicaCount: 1\nadmin: {enabled: true}\n", "admin.keySecret.name"},
		{"embedded store on replicas", "admin: {enabled: true, keySecret: {name: k}}\n", "one pod"},
		{"etcd store without endpoints", "admin: {enabled: true, keySecret: {name: k}, store: etcd}\n", "needs etcd.endpoints"},
		{"gateway without admin", "admin: {gateway: {enabled: true}}\n", "needs admin.enabled"},
		{"no resource file", "config: {resources: \"\"}\n", "config.resources"},
		{"monitor without status service", "status: {service: {enabled: false}}\nserviceMonitor: {enabled: true}\n", "status.service.enabled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := template(t, tc.values)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v; want one naming %q", err, tc.want)
			}
		})
	}
}

func values(t *testing.T, v string) map[string]any {
	t.Helper()
	out := map[string]any{}
	if err := yaml.Unmarshal([]byte(v), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// template is `helm template gw deploy/helm/gw -f values`: an install in
// client-only dry-run mode, with the values schema and the chart's own
// fail checks applied.
func template(t *testing.T, v string) (string, error) {
	t.Helper()
	install := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	install.DryRun, install.ClientOnly, install.Replace = true, true, true
	install.ReleaseName, install.Namespace = "gw", "gw"
	install.KubeVersion = kubeVersion
	install.DisableHooks = true
	rel, err := install.Run(loadChart(t), values(t, v))
	if err != nil {
		return "", err
	}
	return rel.Manifest, nil
}

// render templates v and decodes every manifest strictly into its API
// type, keyed Kind/name.
func render(t *testing.T, v string) map[string]any {
	t.Helper()
	manifest, err := template(t, v)
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string]any{}
	for _, doc := range strings.Split(manifest, "\n---") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Fatal(err)
		}
		var obj interface {
			GetName() string
			GetLabels() map[string]string
		}
		switch tm.APIVersion + " " + tm.Kind {
		case "v1 ConfigMap":
			obj = &corev1.ConfigMap{}
		case "v1 Secret":
			obj = &corev1.Secret{}
		case "v1 Service":
			obj = &corev1.Service{}
		case "apps/v1 Deployment":
			obj = &appsv1.Deployment{}
		case "autoscaling/v2 HorizontalPodAutoscaler":
			obj = &autoscalingv2.HorizontalPodAutoscaler{}
		case "monitoring.coreos.com/v1 ServiceMonitor":
			obj = &monitoringv1.ServiceMonitor{}
		default:
			t.Fatalf("rendered an object of no known API type: %s %s", tm.APIVersion, tm.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Fatalf("%s does not match its API type: %v\n%s", tm.Kind, err, doc)
		}
		if errs := validation.IsDNS1123Subdomain(obj.GetName()); len(errs) > 0 {
			t.Fatalf("%s name %q: %v", tm.Kind, obj.GetName(), errs)
		}
		if errs := metav1validateLabels(obj.GetLabels()); errs != "" {
			t.Fatalf("%s labels: %s", tm.Kind, errs)
		}
		key := tm.Kind + "/" + obj.GetName()
		if _, dup := objs[key]; dup {
			t.Fatalf("%s rendered twice", key)
		}
		objs[key] = obj
	}
	checkWiring(t, objs)
	return objs
}

// checkWiring checks what the API server would refuse or what would fail
// only at run time: the selector matches the pod labels, every named port
// a probe or Service uses is declared by the container, env names are
// valid, and every mount has its volume.
func checkWiring(t *testing.T, objs map[string]any) {
	t.Helper()
	d, ok := objs["Deployment/gw"].(*appsv1.Deployment)
	if !ok {
		t.Fatal("no Deployment/gw")
	}
	pod := d.Spec.Template
	if !matches(d.Spec.Selector.MatchLabels, pod.Labels) {
		t.Fatalf("selector %v does not match pod labels %v", d.Spec.Selector.MatchLabels, pod.Labels)
	}
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	ports := map[string]bool{}
	for _, p := range c.Ports {
		if errs := validation.IsValidPortName(p.Name); len(errs) > 0 {
			t.Fatalf("port name %q: %v", p.Name, errs)
		}
		ports[p.Name] = true
	}
	for _, pr := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if pr == nil || pr.HTTPGet == nil || !ports[pr.HTTPGet.Port.StrVal] {
			t.Fatalf("probe %+v uses no declared port", pr)
		}
	}
	for key, o := range objs {
		svc, ok := o.(*corev1.Service)
		if !ok {
			continue
		}
		if !matches(svc.Spec.Selector, pod.Labels) {
			t.Fatalf("%s selects no gw pod", key)
		}
		for _, p := range svc.Spec.Ports {
			if !ports[p.TargetPort.StrVal] {
				t.Fatalf("%s targets port %q the container does not declare", key, p.TargetPort.StrVal)
			}
		}
	}
	for _, e := range c.Env {
		if errs := validation.IsEnvVarName(e.Name); len(errs) > 0 {
			t.Fatalf("env %q: %v", e.Name, errs)
		}
	}
	vols := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		vols[v.Name] = true
	}
	for _, m := range c.VolumeMounts {
		if !vols[m.Name] {
			t.Fatalf("mount %s has no volume", m.Name)
		}
	}
}

func metav1validateLabels(l map[string]string) string {
	var b bytes.Buffer
	for k, v := range l {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			fmt.Fprintf(&b, "%s: %v; ", k, errs)
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			fmt.Fprintf(&b, "%s=%s: %v; ", k, v, errs)
		}
	}
	return b.String()
}

func matches(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func kinds(objs map[string]any) string {
	var ks []string
	for k := range objs {
		ks = append(ks, k[:strings.IndexByte(k, '/')])
	}
	slices.Sort(ks)
	return strings.Join(ks, " ")
}

func probe(t *testing.T, p *corev1.Probe, path, port string) {
	t.Helper()
	if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port.StrVal != port {
		t.Fatalf("probe %+v; want GET %s on port %s", p, path, port)
	}
}

func envIs(t *testing.T, c corev1.Container, name, want string) {
	t.Helper()
	for _, e := range c.Env {
		if e.Name == name {
			if e.Value != want || e.ValueFrom != nil {
				t.Fatalf("%s = %q; want %q", name, e.Value, want)
			}
			return
		}
	}
	t.Fatalf("%s not set", name)
}

func envFromSecret(t *testing.T, c corev1.Container, name, secret, key string) {
	t.Helper()
	for _, e := range c.Env {
		if e.Name == name {
			if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != secret || e.ValueFrom.SecretKeyRef.Key != key {
				t.Fatalf("%s is not read from Secret %s key %s: %+v", name, secret, key, e)
			}
			return
		}
	}
	t.Fatalf("%s not set", name)
}

func envAbsent(t *testing.T, c corev1.Container, names ...string) {
	t.Helper()
	for _, e := range c.Env {
		for _, n := range names {
			if e.Name == n {
				t.Fatalf("%s set to %q", n, e.Value)
			}
		}
	}
}

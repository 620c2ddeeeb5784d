package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	sigsyaml "sigs.k8s.io/yaml"
)

// manifest is one decoded Kubernetes object.
type manifest struct {
	file string
	kind string
	name string
	obj  any
}

func (m manifest) String() string { return fmt.Sprintf("%s %s/%s", m.file, m.kind, m.name) }

// kinds are the API types the manifests may use, by apiVersion and kind.
var kinds = map[string]func() any{
	"v1/ConfigMap":                           func() any { return &corev1.ConfigMap{} },
	"v1/Secret":                              func() any { return &corev1.Secret{} },
	"v1/Service":                             func() any { return &corev1.Service{} },
	"v1/PersistentVolumeClaim":               func() any { return &corev1.PersistentVolumeClaim{} },
	"apps/v1/Deployment":                     func() any { return &appsv1.Deployment{} },
	"apps/v1/StatefulSet":                    func() any { return &appsv1.StatefulSet{} },
	"autoscaling/v2/HorizontalPodAutoscaler": func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	"policy/v1/PodDisruptionBudget":          func() any { return &policyv1.PodDisruptionBudget{} },
}

// decodeFile splits a multi-document YAML file and decodes each document
// strictly into its API type: an unknown or misspelt field, a wrong type or
// a duplicate key fails.
func decodeFile(path string) ([]manifest, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []manifest
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	for i := 0; ; i++ {
		var doc yaml.Node
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(doc.Content) == 0 || doc.Content[0].Tag == "!!null" {
			continue
		}
		b, err := yaml.Marshal(doc.Content[0])
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		var tm metav1.TypeMeta
		if err := sigsyaml.Unmarshal(b, &tm); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		newObj, ok := kinds[tm.APIVersion+"/"+tm.Kind]
		if !ok {
			return nil, fmt.Errorf("document %d: apiVersion %q kind %q is not one the manifests use", i, tm.APIVersion, tm.Kind)
		}
		obj := newObj()
		if err := sigsyaml.UnmarshalStrict(b, obj); err != nil {
			return nil, fmt.Errorf("document %d (%s): %w", i, tm.Kind, err)
		}
		name := obj.(metav1.Object).GetName()
		out = append(out, manifest{file: filepath.Base(path), kind: tm.Kind, name: name, obj: obj})
	}
	return out, nil
}

// loadManifests decodes every manifest under kubernetes/, examples
// included.
func loadManifests(t *testing.T) []manifest {
	t.Helper()
	files, err := filepath.Glob("kubernetes/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	examples, _ := filepath.Glob("kubernetes/examples/*.yaml")
	files = append(files, examples...)
	if len(files) == 0 {
		t.Fatal("no manifests in kubernetes/")
	}
	var all []manifest
	for _, f := range files {
		ms, err := decodeFile(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		all = append(all, ms...)
	}
	return all
}

// cluster indexes the manifests by kind and name.
type cluster struct {
	all []manifest
	by  map[string]manifest // "Kind/name"
}

func newCluster(t *testing.T) *cluster {
	c := &cluster{all: loadManifests(t), by: map[string]manifest{}}
	for _, m := range c.all {
		key := m.kind + "/" + m.name
		if prev, dup := c.by[key]; dup {
			t.Errorf("%s is defined twice (also in %s)", m, prev.file)
		}
		c.by[key] = m
	}
	return c
}

func get[T any](c *cluster, kind, name string) (T, bool) {
	m, ok := c.by[kind+"/"+name]
	if !ok {
		var zero T
		return zero, false
	}
	return m.obj.(T), true
}

// workload is a Deployment's or StatefulSet's pod side.
type workload struct {
	m        manifest
	selector *metav1.LabelSelector
	pod      corev1.PodTemplateSpec
	claims   []string // StatefulSet volumeClaimTemplates
}

func (c *cluster) workloads() []workload {
	var ws []workload
	for _, m := range c.all {
		switch o := m.obj.(type) {
		case *appsv1.Deployment:
			ws = append(ws, workload{m: m, selector: o.Spec.Selector, pod: o.Spec.Template})
		case *appsv1.StatefulSet:
			w := workload{m: m, selector: o.Spec.Selector, pod: o.Spec.Template}
			for _, vc := range o.Spec.VolumeClaimTemplates {
				w.claims = append(w.claims, vc.Name)
			}
			ws = append(ws, w)
		}
	}
	return ws
}

func TestKubernetesManifestsDecode(t *testing.T) {
	c := newCluster(t)
	for _, m := range c.all {
		if errs := validation.IsDNS1123Subdomain(m.name); len(errs) > 0 {
			t.Errorf("%s: name: %s", m, strings.Join(errs, "; "))
		}
	}
	for _, want := range []string{"Deployment/mixchat", "Service/mixchat", "ConfigMap/mixchat-config", "Secret/mixchat-secrets",
		"HorizontalPodAutoscaler/mixchat", "StatefulSet/postgres", "StatefulSet/qdrant", "Service/postgres", "Service/qdrant"} {
		if _, ok := c.by[want]; !ok {
			t.Errorf("no %s in kubernetes/", want)
		}
	}
}

// envRef is a $(VAR) reference in a container's env value.
var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

func TestKubernetesReferences(t *testing.T) {
	c := newCluster(t)
	for _, w := range c.workloads() {
		sel, err := metav1.LabelSelectorAsSelector(w.selector)
		if err != nil || sel.Empty() {
			t.Errorf("%s: selector %v: %v", w.m, w.selector, err)
		} else if !sel.Matches(labels.Set(w.pod.Labels)) {
			t.Errorf("%s: selector %v does not match the pod labels %v", w.m, w.selector, w.pod.Labels)
		}
		volumes := slices.Clone(w.claims)
		for _, v := range w.pod.Spec.Volumes {
			volumes = append(volumes, v.Name)
			if v.ConfigMap != nil {
				if _, ok := c.by["ConfigMap/"+v.ConfigMap.Name]; !ok {
					t.Errorf("%s: volume %s: no ConfigMap %s", w.m, v.Name, v.ConfigMap.Name)
				}
			}
			if v.PersistentVolumeClaim != nil {
				if _, ok := c.by["PersistentVolumeClaim/"+v.PersistentVolumeClaim.ClaimName]; !ok {
					t.Errorf("%s: volume %s: no PersistentVolumeClaim %s", w.m, v.Name, v.PersistentVolumeClaim.ClaimName)
				}
			}
		}
		for _, ctr := range w.pod.Spec.Containers {
			where := fmt.Sprintf("%s container %s", w.m, ctr.Name)
			if ref := ctr.Image; ref == "" || !strings.Contains(ref[strings.LastIndex(ref, "/")+1:], ":") {
				t.Errorf("%s: image %q has no tag", where, ref)
			}
			req := ctr.Resources.Requests
			if req.Cpu().IsZero() || req.Memory().IsZero() || ctr.Resources.Limits.Memory().IsZero() {
				t.Errorf("%s: set requests.cpu, requests.memory and limits.memory (got %v / %v)", where, req, ctr.Resources.Limits)
			}
			for _, vm := range ctr.VolumeMounts {
				if !slices.Contains(volumes, vm.Name) {
					t.Errorf("%s: mounts %s, which is no volume of the pod", where, vm.Name)
				}
			}
			var ports []string
			for _, p := range ctr.Ports {
				ports = append(ports, p.Name)
			}
			for name, p := range map[string]*corev1.Probe{"startup": ctr.StartupProbe, "readiness": ctr.ReadinessProbe, "liveness": ctr.LivenessProbe} {
				if p != nil && p.HTTPGet != nil && p.HTTPGet.Port.StrVal != "" && !slices.Contains(ports, p.HTTPGet.Port.StrVal) {
					t.Errorf("%s: %s probe port %q is not a container port %v", where, name, p.HTTPGet.Port.StrVal, ports)
				}
			}
			defined := map[string]bool{}
			for _, e := range ctr.Env {
				for _, ref := range envRef.FindAllStringSubmatch(e.Value, -1) {
					if !defined[ref[1]] {
						t.Errorf("%s: %s refers to $(%s), which is not defined before it", where, e.Name, ref[1])
					}
				}
				defined[e.Name] = true
				if e.ValueFrom == nil {
					continue
				}
				if r := e.ValueFrom.SecretKeyRef; r != nil {
					s, ok := get[*corev1.Secret](c, "Secret", r.Name)
					_, inData := s.Data[r.Key]
					_, inString := s.StringData[r.Key]
					switch {
					case !ok:
						t.Errorf("%s: %s: no Secret %s", where, e.Name, r.Name)
					case !inData && !inString && (r.Optional == nil || !*r.Optional):
						t.Errorf("%s: %s: Secret %s has no key %s", where, e.Name, r.Name, r.Key)
					}
				}
				if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
					if cm, ok := get[*corev1.ConfigMap](c, "ConfigMap", r.Name); !ok {
						t.Errorf("%s: %s: no ConfigMap %s", where, e.Name, r.Name)
					} else if _, ok := cm.Data[r.Key]; !ok {
						t.Errorf("%s: %s: ConfigMap %s has no key %s", where, e.Name, r.Name, r.Key)
					}
				}
			}
		}
		if ss, ok := w.m.obj.(*appsv1.StatefulSet); ok {
			svc, ok := get[*corev1.Service](c, "Service", ss.Spec.ServiceName)
			if !ok || svc.Spec.ClusterIP != corev1.ClusterIPNone {
				t.Errorf("%s: serviceName %q must name a headless Service", w.m, ss.Spec.ServiceName)
			}
		}
	}

	// Every Service selects the pods of a workload and targets their ports.
	for _, m := range c.all {
		svc, ok := m.obj.(*corev1.Service)
		if !ok {
			continue
		}
		var target *workload
		for _, w := range c.workloads() {
			if len(svc.Spec.Selector) > 0 && labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(w.pod.Labels)) {
				target = &w
				break
			}
		}
		if target == nil {
			t.Errorf("%s: selector %v matches no workload's pods", m, svc.Spec.Selector)
			continue
		}
		var ports []string
		for _, ctr := range target.pod.Spec.Containers {
			for _, p := range ctr.Ports {
				ports = append(ports, p.Name)
			}
		}
		for _, p := range svc.Spec.Ports {
			if p.TargetPort.StrVal != "" && !slices.Contains(ports, p.TargetPort.StrVal) {
				t.Errorf("%s: port %s targets %q, not a port of %s %v", m, p.Name, p.TargetPort.StrVal, target.m, ports)
			}
		}
	}
	for _, m := range c.all {
		pdb, ok := m.obj.(*policyv1.PodDisruptionBudget)
		if !ok {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		matched := false
		for _, w := range c.workloads() {
			matched = matched || (err == nil && sel.Matches(labels.Set(w.pod.Labels)))
		}
		if !matched {
			t.Errorf("%s: selector matches no workload", m)
		}
	}
}

func TestKubernetesMixchat(t *testing.T) {
	c := newCluster(t)
	d, ok := get[*appsv1.Deployment](c, "Deployment", "mixchat")
	if !ok {
		t.Fatal("no Deployment mixchat")
	}
	pod := d.Spec.Template.Spec
	if sc := pod.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		t.Errorf("pod securityContext must set runAsNonRoot: true and a non-zero runAsUser: %+v", sc)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(pod.Containers))
	}
	ctr := pod.Containers[0]
	if sc := ctr.SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("container securityContext must forbid privilege escalation, mount the root read-only and drop ALL capabilities: %+v", sc)
	}
	probePath := func(p *corev1.Probe) string {
		if p == nil || p.HTTPGet == nil {
			return ""
		}
		return p.HTTPGet.Path
	}
	if got := probePath(ctr.ReadinessProbe); got != "/readyz" {
		t.Errorf("readiness probe path = %q, want /readyz", got)
	}
	if got := probePath(ctr.LivenessProbe); got != "/healthz" {
		t.Errorf("liveness probe path = %q, want /healthz", got)
	}
	if p := ctr.ReadinessProbe; p != nil && p.TimeoutSeconds < 3 {
		t.Errorf("readiness timeoutSeconds = %d: /readyz may take up to 2s per dependency", p.TimeoutSeconds)
	}
	// Shutdown: replies in flight get server.shutdown_timeout (30s) after
	// the preStop pause; Kubernetes must not kill the pod before that.
	var pause int64
	if l := ctr.Lifecycle; l != nil && l.PreStop != nil && l.PreStop.Sleep != nil {
		pause = l.PreStop.Sleep.Seconds
	}
	if g := pod.TerminationGracePeriodSeconds; g == nil || *g < 30+pause {
		t.Errorf("terminationGracePeriodSeconds %v < 30s shutdown timeout + %ds preStop", g, pause)
	}
	env := map[string]string{}
	for _, e := range ctr.Env {
		env[e.Name] = e.Value
	}
	for k, want := range map[string]string{"MIXCHAT_SERVER_ADDR": "0.0.0.0:7861", "MIXCHAT_STORE_DRIVER": "postgres", "MIXCHAT_KB_QDRANT_ADDR": "qdrant:6334", "MIXCHAT_AUTH_ENABLED": "true"} {
		if env[k] != want {
			t.Errorf("env %s = %q, want %q", k, env[k], want)
		}
	}
	if dsn := env["MIXCHAT_STORE_DSN"]; !strings.Contains(dsn, "@postgres:5432/") {
		t.Errorf("MIXCHAT_STORE_DSN %q does not point at the postgres Service", dsn)
	}
	if img := composeImage(t); ctr.Image != img {
		t.Errorf("Deployment image %q differs from the Compose file's %q", ctr.Image, img)
	}
	if strings.HasSuffix(ctr.Image, ":latest") {
		t.Errorf("image %q: pin a version", ctr.Image)
	}

	// Knowledge bases shared by every replica: PostgreSQL (the store's
	// database, through the same secret) and Qdrant.
	for k, want := range map[string]string{"MIXCHAT_KB_STORE": "postgres", "MIXCHAT_KB_VECTOR_STORE": "qdrant"} {
		if env[k] != want {
			t.Errorf("env %s = %q, want %q: replicas share knowledge bases through PostgreSQL and Qdrant", k, env[k], want)
		}
	}
	if env["MIXCHAT_KB_DSN"] == "" || env["MIXCHAT_KB_DSN"] != env["MIXCHAT_STORE_DSN"] {
		t.Errorf("MIXCHAT_KB_DSN %q, want the conversation store's DSN %q", env["MIXCHAT_KB_DSN"], env["MIXCHAT_STORE_DSN"])
	}

	// Scaling: stateless replicas, at least two, rolled one by one, driven
	// by the autoscaler; no volume that ties the pod to one node or one
	// writer.
	hpa, ok := get[*autoscalingv2.HorizontalPodAutoscaler](c, "HorizontalPodAutoscaler", "mixchat")
	if !ok {
		t.Fatal("no HorizontalPodAutoscaler mixchat")
	}
	if ref := hpa.Spec.ScaleTargetRef; ref.Kind != "Deployment" || ref.Name != "mixchat" || ref.APIVersion != "apps/v1" {
		t.Errorf("autoscaler targets %+v, want apps/v1 Deployment mixchat", ref)
	}
	minReplicas := int32(1)
	if hpa.Spec.MinReplicas != nil {
		minReplicas = *hpa.Spec.MinReplicas
	}
	if minReplicas != 2 || hpa.Spec.MaxReplicas != 10 || len(hpa.Spec.Metrics) == 0 {
		t.Errorf("autoscaler: minReplicas %d, maxReplicas %d, %d metrics; want 2, 10 and a metric", minReplicas, hpa.Spec.MaxReplicas, len(hpa.Spec.Metrics))
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas < minReplicas || *d.Spec.Replicas > hpa.Spec.MaxReplicas {
		t.Errorf("Deployment replicas %v, want within the autoscaler's %d..%d", d.Spec.Replicas, minReplicas, hpa.Spec.MaxReplicas)
	}
	if st := d.Spec.Strategy; st.Type != appsv1.RollingUpdateDeploymentStrategyType {
		t.Errorf("strategy %q, want RollingUpdate", st.Type)
	} else if ru := st.RollingUpdate; ru == nil || ru.MaxUnavailable == nil || ru.MaxUnavailable.IntValue() != 0 {
		t.Errorf("rolling update %+v: want maxUnavailable 0, so a rollout never drops below the replicas serving", ru)
	}
	for _, v := range pod.Volumes {
		if v.PersistentVolumeClaim != nil {
			t.Errorf("volume %s: claim %s: replicas keep no state of their own (use an emptyDir)", v.Name, v.PersistentVolumeClaim.ClaimName)
		}
	}
	if _, ok := get[*corev1.PersistentVolumeClaim](c, "PersistentVolumeClaim", "mixchat-kb"); ok {
		t.Error("the mixchat-kb claim is left: knowledge bases are in PostgreSQL and Qdrant")
	}
	pdb, ok := get[*policyv1.PodDisruptionBudget](c, "PodDisruptionBudget", "mixchat")
	if !ok {
		t.Fatal("no PodDisruptionBudget mixchat")
	}
	switch {
	case pdb.Spec.MaxUnavailable != nil:
		if n := pdb.Spec.MaxUnavailable.IntValue(); n < 1 || int32(n) >= minReplicas {
			t.Errorf("disruption budget maxUnavailable %d: want 1..%d, so drains proceed and one replica keeps serving", n, minReplicas-1)
		}
	case pdb.Spec.MinAvailable != nil:
		if n := pdb.Spec.MinAvailable.IntValue(); n < 1 || int32(n) >= minReplicas {
			t.Errorf("disruption budget minAvailable %d: want 1..%d, so drains proceed and one replica keeps serving", n, minReplicas-1)
		}
	default:
		t.Error("disruption budget sets neither maxUnavailable nor minAvailable")
	}
}

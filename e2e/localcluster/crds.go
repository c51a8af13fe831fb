package localcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
)

// InstallCRDs creates (or updates) every CustomResourceDefinition in the
// *.yaml/*.yml files of dir and waits until all are Established. It returns
// their names.
func (c *Cluster) InstallCRDs(ctx context.Context, dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.y*ml"))
	if err != nil {
		return nil, err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		if ext := filepath.Ext(f); ext != ".yaml" && ext != ".yml" {
			continue
		}
		docs, err := readCRDs(f)
		if err != nil {
			return nil, err
		}
		crds = append(crds, docs...)
	}
	if len(crds) == 0 {
		return nil, fmt.Errorf("no CustomResourceDefinitions in %s", dir)
	}
	client, err := apiextensionsclient.NewForConfig(c.RESTConfig())
	if err != nil {
		return nil, err
	}
	api := client.ApiextensionsV1().CustomResourceDefinitions()
	var names []string
	for _, crd := range crds {
		names = append(names, crd.Name)
		_, err := api.Create(ctx, crd, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			var old *apiextensionsv1.CustomResourceDefinition
			if old, err = api.Get(ctx, crd.Name, metav1.GetOptions{}); err == nil {
				crd.ResourceVersion = old.ResourceVersion
				_, err = api.Update(ctx, crd, metav1.UpdateOptions{})
			}
		}
		if err != nil {
			return nil, fmt.Errorf("install CRD %s: %w", crd.Name, err)
		}
	}
	for _, name := range names {
		for {
			crd, err := api.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			if established(crd) {
				break
			}
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("CRD %s not Established: %w (conditions %+v)", name, ctx.Err(), crd.Status.Conditions)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return names, nil
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	return slices.ContainsFunc(crd.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
		return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
	})
}

func readCRDs(path string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := dec.Decode(crd); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if crd.Kind == "" && crd.Name == "" {
			continue // empty document
		}
		if crd.Kind != "CustomResourceDefinition" {
			return nil, fmt.Errorf("%s: a %s %q is not a CustomResourceDefinition", path, crd.Kind, crd.Name)
		}
		out = append(out, crd)
	}
}

// GrantClusterAdmin binds the cluster-admin ClusterRole to user (for `make
// run`, until the operator's own RBAC manifests are used) and waits until the
// authorizer applies it (its informer lags the write, more so on a loaded
// machine).
func (c *Cluster) GrantClusterAdmin(ctx context.Context, user string) error {
	client, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "localcluster:" + user + ":cluster-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	_, err = client.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               user,
		Groups:             []string{"system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "*", Group: "*", Resource: "*"},
	}}
	for {
		r, err := client.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if r.Status.Allowed {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster-admin for %s not in effect: %w", user, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

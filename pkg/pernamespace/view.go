// Package pernamespace holds what the operator keeps for each namespace it
// watches: one value for all namespaces when it watches every namespace
// (one informer per type), else one per listed namespace. The informer
// factories it is built from are keyed the same way ("" = all namespaces).
package pernamespace

import (
	"iter"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// View is a T per watched namespace, or one T for all of them. The zero
// View watches nothing.
type View[T any] struct {
	// all is set (hasAll) when every namespace is watched by one T.
	all         T
	hasAll      bool
	byNamespace map[string]T
}

// Set records v as the T of namespace ns; ns "" (metav1.NamespaceAll)
// makes v the T of every namespace.
func (w *View[T]) Set(ns string, v T) {
	if ns == metav1.NamespaceAll {
		w.all, w.hasAll = v, true
		return
	}
	if w.byNamespace == nil {
		w.byNamespace = map[string]T{}
	}
	w.byNamespace[ns] = v
}

// For returns the T that holds the objects of ns, and false (with the zero
// T) when ns is not watched.
func (w *View[T]) For(ns string) (T, bool) {
	if w.hasAll {
		return w.all, true
	}
	v, ok := w.byNamespace[ns]
	return v, ok
}

// Each yields every T once: the one of all namespaces when there is one,
// else those of the watched namespaces, in no particular order.
func (w *View[T]) Each() iter.Seq[T] {
	return func(yield func(T) bool) {
		if w.hasAll {
			yield(w.all)
			return
		}
		for _, v := range w.byNamespace {
			if !yield(v) {
				return
			}
		}
	}
}

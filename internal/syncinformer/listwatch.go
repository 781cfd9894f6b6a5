package syncinformer

import "k8s.io/client-go/tools/cache"

// ListThenWatch returns lw for a reflector that lists, then watches from
// the list's revision, rather than streaming its list in the watch
// (client-go's WatchListClient). A streamed list waits for the apiserver's
// watch cache to reach etcd's latest revision, and ends in an error after
// three seconds when it does not: in a storm of writes, as when a zone
// dies, the reflector begins it again and again, and its informer does not
// sync. A list at resourceVersion 0 is served from the watch cache as it
// stands, and the watch brings the rest. The cache may then start behind
// the cluster, as a lagging watch leaves it: the controllers read a node
// live before they mark it, mark its pods NotReady or evict them for its
// failure, lock each write to a Node to the resourceVersion it was decided
// on, and name a pod's UID in each write to it.
func ListThenWatch(lw *cache.ListWatch) cache.ListerWatcher { return listThenWatch{lw} }

type listThenWatch struct{ *cache.ListWatch }

// IsWatchListSemanticsUnSupported tells client-go's reflector not to
// stream the list.
func (listThenWatch) IsWatchListSemanticsUnSupported() bool { return true }

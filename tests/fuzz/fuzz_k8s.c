/* libFuzzer target: Kubernetes objects and watch events, protobuf and JSON. */
#include <stddef.h>
#include <stdint.h>

#include "k8s.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct k8s_object o;
	static struct k8s_watch_event ev;
	struct k8s_table_columns cols;

	k8s_table_columns__init(&cols);
	k8s__decode_protobuf(data, size, &o);
	k8s__decode_raw("Pod", data, size, &o);
	k8s__decode_raw("Binding", data, size, &o);
	k8s__decode_raw("Status", data, size, &o);
	k8s__decode_watch_event_protobuf(data, size, &ev);
	k8s__looks_like_watch_frame(data, size);
	k8s__decode_json((const char *)data, size, &o, &cols);
	k8s__decode_watch_event_json((const char *)data, size, &ev, &cols, NULL, NULL);
	return 0;
}

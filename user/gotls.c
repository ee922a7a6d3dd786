/* crypto/tls's TLS 1.3 state by Go release (see gotls.h). */
#include "gotls.h"

#include <errno.h>
#include <stddef.h>

/* What moved the fields: 1.21 added Conn.quic, Conn.extMasterSecret and halfConn.level (before
 * trafficSecret); 1.23 Conn.didHRR, curveID and echAccepted; 1.25 dropped Conn.activeCertHandles
 * and added peerSigAlg. The patch releases compared kept their minor's layout (1.23.8 and
 * 1.23.12, 1.24.2 and 1.24.13, 1.25.11 and 1.25.14, 1.26.8 and 1.26.10); test_gotls checks the
 * fixtures' toolchains. */
static const struct {
	int minor;
	struct tls_layout layout;
} layouts[] = {
	{ 21, { 376, 528, 72, 98, 24, 64, 128, 0 } },
	{ 22, { 376, 528, 72, 98, 24, 64, 128, 0 } },
	{ 23, { 384, 536, 72, 100, 24, 64, 128, 0 } },
	{ 24, { 384, 536, 72, 100, 24, 64, 128, 0 } },
	{ 25, { 368, 520, 72, 100, 24, 64, 128, 0 } },
	{ 26, { 368, 520, 72, 100, 24, 64, 128, 0 } },
};

int gotls__layout(int major, int minor, struct tls_layout *out)
{
	if (major != 1)
		return -ENOTSUP;
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		if (layouts[i].minor == minor) {
			*out = layouts[i].layout;
			return 0;
		}
	}
	return -ENOTSUP;
}

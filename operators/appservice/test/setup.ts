// scaffolded by opkit — this file is yours to edit
// The global setup of `npm test` (`opkit test`; on Node 24 also node --test --test-global-setup=test/setup.ts): one
// local control plane for the whole run, started before the first test file and stopped after the last. Each file
// attaches to it with sharedEnvironment(); a file run alone (node --test test/x.test.ts) starts one of its own. The
// files share the cluster, so give each test's objects names (or namespaces) of their own. Its progress lines go to
// stderr: the first run on a machine downloads (or builds) the control-plane binaries, and says so.
// Its CRDs are not installed here (no `crds`): its tests install them themselves, with the conversion webhook
// pointed at a server in the test process (src/install.ts), and a server-side apply as another field manager cannot
// replace the webhook Service a CRD installed here would name.
import { shareEnvironment } from '@opkit/testenv';

export const { globalSetup, globalTeardown } = shareEnvironment({ nodes: 1 });

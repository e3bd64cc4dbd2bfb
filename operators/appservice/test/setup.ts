// scaffolded by opkit — this file is yours to edit
// The global setup of `npm test` (`opkit test`; on Node 24 also node --test --test-global-setup=test/setup.ts): one
// local control plane for the whole run, started before the first test file and stopped after the last. Each file
// attaches to it with sharedEnvironment(); a file run alone (node --test test/x.test.ts) starts one of its own. The
// files share the cluster, so give each test's objects names (or namespaces) of their own. Its progress lines go to
// stderr: the first run on a machine downloads (or builds) the control-plane binaries, and says so.
import { shareEnvironment } from '@opkit/testenv';

export const { globalSetup, globalTeardown } = shareEnvironment({ nodes: 1 });

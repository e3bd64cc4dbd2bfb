// scaffolded by opkit — this file is yours to edit
// The global setup of `npm test` (`opkit test`; on Node 24 also node --test --test-global-setup=test/setup.ts): one
// local control plane for the whole run, started before the first test file and stopped after the last. Each file
// attaches to it with sharedEnvironment(); a file run alone (node --test test/x.test.ts) starts one of its own. The
// files share the cluster, so give each test's objects names (or namespaces) of their own. Its progress lines go to
// stderr: the first run on a machine downloads (or builds) the control-plane binaries, and says so.
// The project's CRDs (opkit generate writes them to config/crd/bases, and npm test's pretest checks they are current)
// are installed as it starts: the apiserver holds the first create of a new kind for about 2 s, by then passed.
import { existsSync } from 'node:fs';
import { shareEnvironment } from '@opkit/testenv';

const crds = new URL('../config/crd/bases/', import.meta.url); // none until the first `opkit create api`
export const { globalSetup, globalTeardown } = shareEnvironment({ nodes: 1, crds: existsSync(crds) ? [crds] : [] });

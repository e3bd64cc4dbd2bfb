/**
 * `npm start`: use the cluster of the current kubeconfig when it answers, otherwise start opkit's local cluster
 * (`opkit env up`) in the background, and say how to use it. The AppService operator will run here once it exists.
 */
import { probeCurrentCluster, run } from '@opkit/cli';

const out = (line: string) => process.stdout.write(`${line}\n`);
const err = (line: string) => process.stderr.write(`${line}\n`);

const probe = await probeCurrentCluster();
if (probe.reachable) {
  out(`opkit: the current kubeconfig's cluster answers: ${probe.server} (context ${probe.context}).`);
  out('opkit: nothing to start; the AppService operator (operators/appservice) will run against it here.');
  process.exit(0);
}
out(`opkit: no reachable cluster in the current kubeconfig (${probe.reason}); starting a local one.`);
const code = await run(['env', 'up'], out, err);
if (code === 0) {
  out('');
  out('Use it:   export KUBECONFIG=… (the line above), then e.g. kubectl get nodes');
  out('Status:   npx opkit env status');
  out('Stop it:  npx opkit env down');
}
process.exit(code);

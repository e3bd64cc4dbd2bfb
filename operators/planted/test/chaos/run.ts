// A scenario of the planted operators: a Widget whose Job runs, then is turned off, then the Widget is deleted.
import type { ChaosScenario } from '@opkit/testenv/chaos';

const widget = (run: boolean) => ({
  apiVersion: 'planted.example.com/v1',
  kind: 'Widget',
  metadata: { name: 'runner' },
  spec: { replicas: 1, run },
});

export const scenarios: ChaosScenario[] = [
  {
    name: 'run-then-stop',
    steps: [
      { apply: widget(true) },
      { apply: widget(false) },
      { delete: { apiVersion: 'planted.example.com/v1', kind: 'Widget', name: 'runner' } },
    ],
  },
];

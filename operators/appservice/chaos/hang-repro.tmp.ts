import { runChaos } from './run.ts';
const kinds = process.argv[2] ? process.argv[2].split(',') : undefined;
const fuzz = Number(process.argv[3] ?? 120);
const r = await runChaos({ trials: 1, seed: 7, fuzz, ...(kinds ? { kinds } : {}) } as Parameters<typeof runChaos>[0]);
console.log('RETURNED passed=', r.passed, 'violations=', r.violations.length, 'pid', process.pid);
console.log('resources', JSON.stringify(process.getActiveResourcesInfo()));
setTimeout(() => { console.log('resources after 5s', JSON.stringify(process.getActiveResourcesInfo())); }, 5000).unref();

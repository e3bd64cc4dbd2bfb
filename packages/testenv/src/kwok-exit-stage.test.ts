import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { KWOK_STAGES_FILE, kwokStagesCurrent, kwokStagesText, writeKwokStages } from './build.ts';
import { EXIT_CODE_ANNOTATION, KWOK_EXIT_STAGE } from './kwok-exit-stage.ts';
import { KWOK_STAGES } from './kwok-stages.ts';

test("the stages file is kwok's stages, then the exit-code stage, as separate YAML documents", () => {
  const text = kwokStagesText();
  assert.ok(text.includes(`${KWOK_STAGES}---\n${KWOK_EXIT_STAGE}`));
  assert.match(KWOK_EXIT_STAGE, /^ {2}weight: 10000$/m, 'outweighs pod-complete (no weight)');
  assert.ok(KWOK_EXIT_STAGE.includes(`.metadata.annotations["${EXIT_CODE_ANNOTATION}"]`));
  assert.doesNotMatch(KWOK_STAGES, /^ {2}weight:/m, "kwok's pod-complete has no weight of its own");
});

test('a cache whose stages file lacks the exit-code stage is not current, and is rewritten', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'kwok-stages-'));
  try {
    assert.equal(await kwokStagesCurrent(dir), false, 'no file');
    await writeFile(join(dir, KWOK_STAGES_FILE), `# an older testenv\n${KWOK_STAGES}`);
    assert.equal(await kwokStagesCurrent(dir), false, 'an older file');
    await writeKwokStages(dir);
    assert.equal(await kwokStagesCurrent(dir), true);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

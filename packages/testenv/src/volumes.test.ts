import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { access, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import {
  HOST_PATH_PROVISIONER,
  HOST_PATH_VOLUME_ROOT,
  isVolumeDir,
  removeVolumeDirs,
  STORAGE_CLASSES,
  shareVolumeRoot,
  storageClassManifests,
  volumeDirsIn,
  volumeDirsOf,
} from './volumes.ts';

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

test('two StorageClasses of the host-path provisioner: the default waits for the first consumer', () => {
  const [standard, immediate, ...rest] = storageClassManifests();
  assert.equal(rest.length, 0);
  assert.equal(standard?.metadata.name, STORAGE_CLASSES.default);
  assert.equal(standard?.metadata.annotations['storageclass.kubernetes.io/is-default-class'], 'true');
  assert.equal(standard?.volumeBindingMode, 'WaitForFirstConsumer');
  assert.equal(immediate?.metadata.name, STORAGE_CLASSES.immediate);
  assert.equal(immediate?.metadata.annotations['storageclass.kubernetes.io/is-default-class'], 'false');
  assert.equal(immediate?.volumeBindingMode, 'Immediate');
  for (const c of [standard, immediate]) {
    assert.equal(c?.provisioner, HOST_PATH_PROVISIONER);
    assert.equal(c?.reclaimPolicy, 'Delete');
    assert.equal(c?.allowVolumeExpansion, false);
  }
});

test('isVolumeDir accepts only /tmp/hostpath_pv/<uuid>', () => {
  const uuid = randomUUID();
  assert.equal(isVolumeDir(`/tmp/hostpath_pv/${uuid}`), true);
  for (const path of [
    '/tmp/hostpath_pv',
    '/tmp/hostpath_pv/',
    `/tmp/hostpath_pv/${uuid}/sub`,
    `/tmp/hostpath_pv/${uuid}x`,
    `/tmp/hostpath_pv/${uuid.toUpperCase()}`,
    `/tmp/hostpath_pv/../${uuid}`,
    `/var/tmp/hostpath_pv/${uuid}`,
    `/data/${uuid}`,
  ]) {
    assert.equal(isVolumeDir(path), false, path);
  }
});

test('volumeDirsIn finds each provisioned path once in binary data, and nothing that only looks like one', () => {
  const a = `${HOST_PATH_VOLUME_ROOT}/${randomUUID()}`;
  const b = `${HOST_PATH_VOLUME_ROOT}/${randomUUID()}`;
  // As etcd stores a PV: protobuf framing around the path, the same path in older revisions, and other bytes.
  const data = Buffer.concat([
    Buffer.from([0x6b, 0x38, 0x73, 0x00, 0x0a, 0x12]),
    Buffer.from(a),
    Buffer.from([0x52, 0x00, 0xff]),
    Buffer.from(`${a}R`),
    Buffer.from(`/tmp/hostpath_pv/not-a-uuid /tmp/hostpath_pv/`),
    Buffer.from(b),
    Buffer.from(`${HOST_PATH_VOLUME_ROOT}/${randomUUID().slice(0, 20)}`),
  ]);
  assert.deepEqual(volumeDirsIn(data).sort(), [a, b].sort());
  assert.deepEqual(volumeDirsIn(Buffer.alloc(1024)), []);
});

test('volumeDirsOf reads every file of the run directory’s etcd data, and nothing outside it', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'opkit-volumes-'));
  const inDb = `${HOST_PATH_VOLUME_ROOT}/${randomUUID()}`;
  const inWal = `${HOST_PATH_VOLUME_ROOT}/${randomUUID()}`;
  const outside = `${HOST_PATH_VOLUME_ROOT}/${randomUUID()}`;
  await mkdir(join(dir, 'etcd', 'member', 'snap'), { recursive: true });
  await mkdir(join(dir, 'etcd', 'member', 'wal'), { recursive: true });
  await writeFile(join(dir, 'etcd', 'member', 'snap', 'db'), `..${inDb}..`);
  await writeFile(join(dir, 'etcd', 'member', 'wal', '0.wal'), Buffer.concat([Buffer.from(inWal), Buffer.alloc(64)]));
  await writeFile(join(dir, 'kube-controller-manager.log'), `provisioned ${outside}`);
  assert.deepEqual((await volumeDirsOf(dir)).sort(), [inDb, inWal].sort());
  assert.deepEqual(await volumeDirsOf(join(dir, 'missing')), []);
  await rm(dir, { recursive: true, force: true });
});

test('removeVolumeDirs removes the directories named in the etcd data, or those it is given', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'opkit-volumes-'));
  const named = `${HOST_PATH_VOLUME_ROOT}/${randomUUID()}`;
  const given = `${HOST_PATH_VOLUME_ROOT}/${randomUUID()}`;
  const other = `${HOST_PATH_VOLUME_ROOT}/${randomUUID()}`;
  for (const path of [named, given, other]) await mkdir(join(path, 'data'), { recursive: true });
  await mkdir(join(dir, 'etcd'));
  await writeFile(join(dir, 'etcd', 'db'), named);
  try {
    assert.equal(await removeVolumeDirs(dir), 1);
    assert.deepEqual([await exists(named), await exists(given), await exists(other)], [false, true, true]);
    assert.equal(await removeVolumeDirs(dir, [given]), 1);
    assert.deepEqual([await exists(given), await exists(other)], [false, true]);
    // a path of another shape, however it is handed in, is never removed
    assert.equal(await removeVolumeDirs(dir, [dir, join(other, 'data')]), 0);
    assert.deepEqual([await exists(dir), await exists(other)], [true, true]);
  } finally {
    for (const path of [named, given, other]) await rm(path, { recursive: true, force: true });
    await rm(dir, { recursive: true, force: true });
  }
});

test('shareVolumeRoot makes the root mode 1777 (another user may provision under it), and keeps what is there', async () => {
  const root = join(await mkdtemp(join(tmpdir(), 'opkit-volroot-')), 'hostpath_pv');
  try {
    await shareVolumeRoot(root);
    assert.equal((await stat(root)).mode & 0o7777, 0o1777);
    await writeFile(join(root, 'kept'), 'x');
    await shareVolumeRoot(root);
    assert.ok(await exists(join(root, 'kept')));
  } finally {
    await rm(dirname(root), { recursive: true, force: true });
  }
});

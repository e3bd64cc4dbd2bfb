// scaffolded by opkit — this file is yours to edit
/**
 * @module controllers/children
 * The two things both controllers do with the children they own: find one by name among those `ctx.owned` listed,
 * and create one that a lagging cache (or a stopped predecessor's last write) may already have made.
 */
import { isAlreadyExists } from '@opkit/runtime';

/** The object named `name` among `items`, if any. */
export const named = <T extends { metadata: { name?: string } }>(items: readonly T[], name: string): T | undefined =>
  items.find((o) => o.metadata.name === name);

/** Runs a create: true when it made the object, false on AlreadyExists (it is there already); other errors throw. */
export async function ensure(make: () => Promise<unknown>): Promise<boolean> {
  try {
    await make();
    return true;
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
    return false;
  }
}

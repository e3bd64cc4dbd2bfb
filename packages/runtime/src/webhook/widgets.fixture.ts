/**
 * Test fixture (not built or shipped): the namespaced `Widget` kind (`x.example.com/v1`) the webhook tests admit,
 * default and validate.
 */
import { type KubeObject, resource } from '../client/resource.ts';

/** A Widget: a few optional spec fields to default, validate and patch. */
export interface Widget extends KubeObject {
  spec: { size?: number; color?: string; tags?: string[] };
}

export const Widgets = resource<Widget>({
  group: 'x.example.com',
  version: 'v1',
  kind: 'Widget',
  plural: 'widgets',
  namespaced: true,
});

// scaffolded by opkit — this file is yours to edit
/** The planted operators' API and controller, for tests. */
export { type Widget, Widgets } from './api/v1/widget.ts';
export { PLANTED, setupWidgetController } from './controllers/widget.ts';

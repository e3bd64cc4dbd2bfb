/**
 * `npm start`: runs the AppService operator end to end (see operators/appservice/scripts/start.ts): on the current
 * kubeconfig's cluster when it answers, otherwise on a local control plane; live view until Ctrl-C.
 */
await import('../operators/appservice/scripts/start.ts');

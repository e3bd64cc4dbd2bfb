/**
 * @module kwok-exit-stage
 * testenv's own kwok Stage, added after kwok's standard ones (`kwok-stages.ts`): a running pod that a Job owns and
 * that carries the annotation `testenv.opkit.dev/exit-code` ends **Failed**, its containers terminated with that exit
 * code (reason `Error`), instead of Succeeded. It lets a test show what its operator does with a failing Job on a
 * cluster where nothing really runs: put the annotation on the Job's pod template.
 *
 * Guarantees: pods without the annotation are untouched (kwok's `pod-complete` still makes them Succeeded); a pod
 * with it never becomes Succeeded — kwok picks among matching stages by weight, and `pod-complete` has none (0), so
 * this stage's weight (10000) always wins. The exit code is the annotation's value as the template renders it: give
 * a number (`"1"`, `"137"`).
 */
/**
 * The pod annotation that makes a Job's pod fail on testenv with its value as the exit code (`"1"`): put it on the
 * Job's pod template. See docs/testenv.md, "Failing Jobs".
 */
export const EXIT_CODE_ANNOTATION = 'testenv.opkit.dev/exit-code';

/** The kwok Stage (YAML) written after kwok's own into `kwok-stages.yaml`. */
export const KWOK_EXIT_STAGE: string = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: testenv-pod-exit-code
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Running'
    - key: '.metadata.ownerReferences.[].kind'
      operator: 'In'
      values:
      - 'Job'
    - key: '.metadata.annotations["${EXIT_CODE_ANNOTATION}"]'
      operator: 'Exists'
  weight: 10000
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $code := index .metadata.annotations "${EXIT_CODE_ANNOTATION}" }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        reason: PodFailed
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        reason: PodFailed
        type: ContainersReady
      containerStatuses:
      {{ range $index, $item := .spec.containers }}
      - image: {{ $item.image | Quote }}
        name: {{ $item.name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: {{ $code }}
            finishedAt: {{ $now | Quote }}
            reason: Error
            startedAt: {{ $now | Quote }}
      {{ end }}
      phase: Failed
`;

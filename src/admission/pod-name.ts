/**
 * How a pod is named before it has a name: kube-apiserver fills `metadata.name` from `generateName` only after
 * admission, so a review names the pod by its generateName, or by the request's name.
 */
export function podName(
  metadata: { name?: string; generateName?: string } | undefined,
  requestName?: string,
): string | undefined {
  return metadata?.name ?? metadata?.generateName ?? requestName;
}

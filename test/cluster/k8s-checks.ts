// What a Baton cell's Kubernetes manifests must promise (deploy/kubernetes and the Helm chart in
// deploy/helm), checked on their parsed documents: read by deploy-files.test.ts and
// helm-chart.test.ts. No Kubernetes cluster runs here, so this is a schema-and-promise check.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { stopBoundMs } from '../../src/base/limits.js';
import { parseNodeConfig, type NodeConfig } from '../../src/node/config.js';

/** YAML documents as JSON, through Python's yaml (PyYAML): no YAML parser among Baton's dependencies. */
export function yamlDocuments(file: string): any[] {
  const script = 'import json,sys,yaml; print(json.dumps([d for d in yaml.safe_load_all(open(sys.argv[1])) if d is not None]))';
  return JSON.parse(execFileSync('python3', ['-c', script, file]).toString());
}

export const yamlUnavailable = ((): string | false => {
  try {
    execFileSync('python3', ['-c', 'import yaml'], { stdio: 'ignore' });
    return false;
  } catch {
    return 'python3 with PyYAML (Debian python3-yaml) is needed to read the YAML files';
  }
})();

/**
 * Every member's environment as Kubernetes gives it: the pod's name from the downward API, and
 * $(VAR) references to variables defined before expanded, as the kubelet does.
 */
export function memberEnvironment(container: any, podName: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const variable of container.env) {
    const value = variable.valueFrom?.fieldRef?.fieldPath === 'metadata.name' ? podName : String(variable.value);
    env[variable.name] = value.replace(/\$\(([A-Z_][A-Z0-9_]*)\)/g, (all, name: string) => env[name] ?? all);
  }
  return env;
}

/**
 * The promises: a headless peers service publishing members before they are ready, a PDB of
 * maxUnavailable 1, required anti-affinity, a grace period above the stop bound, /readyz and
 * /livez probes, a volume per member, no lifecycle hook (nothing removes a member on stop), and
 * every member's settings parse as `baton server`'s naming all members through the peers service.
 * Returns each member's parsed configuration.
 */
export function checkStatefulCell(documents: readonly any[]): NodeConfig[] {
  const byKind = (kind: string) => documents.filter((d) => d.kind === kind);
  const set = byKind('StatefulSet')[0];
  assert.ok(set !== undefined, 'a StatefulSet');
  const peers = byKind('Service').find((s) => s.metadata.name === set.spec.serviceName);
  assert.equal(peers.spec.clusterIP, 'None', 'a headless service names each member');
  assert.equal(peers.spec.publishNotReadyAddresses, true, 'members find each other before they are ready');
  assert.equal(byKind('PodDisruptionBudget')[0].spec.maxUnavailable, 1);
  const pod = set.spec.template.spec;
  assert.ok(pod.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution.length > 0);
  assert.ok(pod.terminationGracePeriodSeconds * 1000 > stopBoundMs);
  const container = pod.containers[0];
  assert.equal(container.readinessProbe.httpGet.path, '/readyz');
  assert.equal(container.livenessProbe.httpGet.path, '/livez');
  assert.equal(container.lifecycle, undefined, 'no hook may remove a member on stop');
  assert.equal(set.spec.volumeClaimTemplates[0].metadata.name, container.volumeMounts[0].name);
  const configs: NodeConfig[] = [];
  for (let ordinal = 0; ordinal < set.spec.replicas; ordinal++) {
    const podName = `${set.metadata.name}-${ordinal}`;
    const config = parseNodeConfig([], memberEnvironment(container, podName));
    assert.equal(config.name, podName);
    assert.equal(config.members.length, set.spec.replicas);
    assert.ok(config.members.every((m) => m.peerUrl.includes(`.${set.spec.serviceName}:`)));
    configs.push(config);
  }
  return configs;
}

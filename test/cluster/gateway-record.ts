// Records etcd's JSON-gateway answers to gateway-script.ts as the golden file the gateway test
// compares Baton with. Run against a fresh single-member etcd 3.4 (Debian's etcd-server):
//   etcd --data-dir /tmp/etcd-golden --listen-client-urls http://127.0.0.1:23791 \
//     --advertise-client-urls http://127.0.0.1:23791 --listen-peer-urls http://127.0.0.1:23801 &
//   npm run build && node dist/test/cluster/gateway-record.js http://127.0.0.1:23791 test/fixtures/etcd-gateway/goldens.json
import { writeFileSync } from 'node:fs';
import { runGatewayScript } from './gateway-script.js';

const [base, file] = process.argv.slice(2);
if (base === undefined || file === undefined) {
  console.error('usage: gateway-record.js ETCD_URL GOLDEN_FILE');
  process.exit(2);
}
const version = await fetch(`${base}/version`).then((r) => r.json() as Promise<{ etcdserver: string }>);
const answers = await runGatewayScript(base);
writeFileSync(file, `${JSON.stringify({ etcdserver: version.etcdserver, recorded: new Date().toISOString().slice(0, 10), answers }, null, 1)}\n`);
console.log(`recorded ${answers.length} answers from etcd ${version.etcdserver} into ${file}`);

// The gRPC facade's metrics under the names and labels of go-grpc-prometheus, which etcd serves
// (grpc_server_started_total, grpc_server_handled_total, grpc_server_handling_seconds with
// grpc_type/grpc_service/grpc_method/grpc_code) and etcd's client byte totals. As etcd does,
// every method's counters exist from the start with every code at 0, so dashboards and alert
// ratios have series before the first failure.
import { Counter, Histogram, type CounterChild, type HistogramChild, type Registry } from './registry.js';

/** gRPC status codes by number, spelled as go-grpc-prometheus spells them. */
const codeNames = [
  'OK', 'Canceled', 'Unknown', 'InvalidArgument', 'DeadlineExceeded', 'NotFound', 'AlreadyExists',
  'PermissionDenied', 'ResourceExhausted', 'FailedPrecondition', 'Aborted', 'OutOfRange',
  'Unimplemented', 'Internal', 'Unavailable', 'DataLoss', 'Unauthenticated',
] as const;

const typeNames = { unary: 'unary', serverStream: 'server_stream', clientStream: 'client_stream', bidi: 'bidi_stream' } as const;

export interface GrpcMethodMeter {
  started(): void;
  handled(code: number, seconds: number): void;
  received(bytes: number): void;
  sent(bytes: number): void;
}

export class GrpcMetrics {
  private readonly startedTotal: Counter;
  private readonly handledTotal: Counter;
  private readonly handlingSeconds: Histogram;
  private readonly receivedBytes: CounterChild;
  private readonly sentBytes: CounterChild;
  private readonly receivedMessages: Counter;
  private readonly sentMessages: Counter;

  constructor(registry: Registry) {
    this.startedTotal = registry.add(new Counter('grpc_server_started_total', 'Total number of RPCs started on the server.'));
    this.handledTotal = registry.add(new Counter('grpc_server_handled_total', 'Total number of RPCs completed on the server, regardless of success or failure.'));
    this.handlingSeconds = registry.add(new Histogram('grpc_server_handling_seconds',
      'Histogram of response latency (seconds) of gRPC that had been application-level handled by the server.',
      [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10], false));
    this.receivedMessages = registry.add(new Counter('grpc_server_msg_received_total', 'Total number of RPC stream messages received on the server.'));
    this.sentMessages = registry.add(new Counter('grpc_server_msg_sent_total', 'Total number of gRPC stream messages sent by the server.'));
    this.receivedBytes = registry.add(new Counter('etcd_network_client_grpc_received_bytes_total', 'The total number of bytes received from grpc clients.')).child();
    this.sentBytes = registry.add(new Counter('etcd_network_client_grpc_sent_bytes_total', 'The total number of bytes sent to grpc clients.')).child();
  }

  /** The bound counters of one method (the server calls this once per method it serves). */
  meterOf(service: string, method: string, kind: keyof typeof typeNames): GrpcMethodMeter {
    const base = { grpc_type: typeNames[kind], grpc_service: service, grpc_method: method };
    const started = this.startedTotal.child(base);
    const handled: CounterChild[] = codeNames.map((code) => this.handledTotal.child({ ...base, grpc_code: code }));
    const seconds: HistogramChild | null = kind === 'unary' ? this.handlingSeconds.child(base) : null;
    const receivedMessages = this.receivedMessages.child(base);
    const sentMessages = this.sentMessages.child(base);
    const { receivedBytes, sentBytes } = this;
    return {
      started: () => started.inc(),
      handled: (code, elapsed) => {
        (handled[code] ?? (handled[2] as CounterChild)).inc();
        seconds?.observe(elapsed);
      },
      received: (bytes) => {
        receivedMessages.inc();
        receivedBytes.inc(bytes);
      },
      sent: (bytes) => {
        sentMessages.inc();
        sentBytes.inc(bytes);
      },
    };
  }
}

import { Gauge, Registry } from 'prom-client';

// Prometheus exposition through prom-client: a registry per rendering, gauges only (a run or an audit is a snapshot).
export class Exposition {
  private readonly registry = new Registry();

  gauge(name: string, help: string, labelNames: string[] = []): Gauge<string> {
    return new Gauge({ name, help, labelNames, registers: [this.registry] });
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }
}

# A real Prometheus (Debian's) scraping a real node-exporter (Debian's) on this machine: its textfile collector serves
# the runbook's and the audit's .prom files, which the pool's nodes write into the same directory (mounted at Debian's
# path on each); the project's alert rules and the bed's own are loaded. Every series names its node.
PROMETHEUS_PORT=9090
NODE_EXPORTER_PORT=9100
PROMETHEUS_URL="http://127.0.0.1:$PROMETHEUS_PORT"
# Debian's textfile directory for prometheus-node-exporter.
TEXTFILE_DIR=/var/lib/prometheus/node-exporter
PROMETHEUS_STATE="$TB_STATE/prometheus"
PROJECT_RULES="$(dirname "$TB_ROOT")/src/metrics/node-maint.rules.yml"

start_monitoring() {
  mkdir -p "$TEXTFILE_DIR" "$PROMETHEUS_STATE/data"
  # Only the textfile collector: the bed watches the runbook's metrics, not this machine.
  start_bg node-exporter /usr/bin/prometheus-node-exporter --web.listen-address="127.0.0.1:$NODE_EXPORTER_PORT" \
    --collector.disable-defaults --collector.textfile --collector.textfile.directory="$TEXTFILE_DIR"
  # Scraped and evaluated every 2 s, so a test sees an alert within seconds (production: 15 s to 1 min).
  cat > "$PROMETHEUS_STATE/prometheus.yml" <<YAML
global: {scrape_interval: 2s, evaluation_interval: 2s}
rule_files: ['$PROJECT_RULES', '$TB_ROOT/monitoring/testbed.rules.yml']
scrape_configs:
- job_name: node
  static_configs: [{targets: ['127.0.0.1:$NODE_EXPORTER_PORT']}]
YAML
  /usr/bin/promtool check config "$PROMETHEUS_STATE/prometheus.yml" >/dev/null
  # A changed config or rule file takes a restart (the bed keeps no reload endpoint open).
  local key; key=$(cat "$PROMETHEUS_STATE/prometheus.yml" "$PROJECT_RULES" "$TB_ROOT/monitoring/testbed.rules.yml" | sha256sum)
  [ "$(cat "$PROMETHEUS_STATE/config.sha" 2>/dev/null)" = "$key" ] || stop_bg prometheus
  echo "$key" > "$PROMETHEUS_STATE/config.sha"
  start_bg prometheus /usr/bin/prometheus --config.file="$PROMETHEUS_STATE/prometheus.yml" --storage.tsdb.path="$PROMETHEUS_STATE/data" \
    --storage.tsdb.retention.time=1d --web.listen-address="127.0.0.1:$PROMETHEUS_PORT"
  wait_for "prometheus to scrape node-exporter" 60 prometheus_scrapes
}

prometheus_scrapes() {
  curl -fsS "$PROMETHEUS_URL/api/v1/targets?state=active" | jq -e '.data.activeTargets | length > 0 and all(.health == "up")'
}

stop_monitoring() {
  stop_bg prometheus
  stop_bg node-exporter
  rm -f "$TEXTFILE_DIR"/node_maint_*.prom
}

package cluster

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/flinkops/flink-operator/pkg/config"
)

// DefaultLog4jConsole is written as log4j-console.properties when
// spec.logConfiguration has none. The ConfigMap replaces the image's conf
// directory, so without it Flink would log nothing useful. It logs to the
// console (kubectl logs) and to the file the web UI shows (${sys:log.file},
// set by the image's scripts), at INFO, with the usual noisy loggers quieted.
const DefaultLog4jConsole = `# Written by the operator because spec.logConfiguration has no log4j-console.properties.
monitorInterval = 30

rootLogger.level = INFO
rootLogger.appenderRef.console.ref = ConsoleAppender
rootLogger.appenderRef.rolling.ref = RollingFileAppender

# Third-party libraries that are chatty at INFO.
logger.pekko.name = org.apache.pekko
logger.pekko.level = INFO
logger.akka.name = akka
logger.akka.level = INFO
logger.kafka.name = org.apache.kafka
logger.kafka.level = INFO
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = WARN
logger.zookeeper.name = org.apache.zookeeper
logger.zookeeper.level = INFO
logger.shaded_zookeeper.name = org.apache.flink.shaded.zookeeper3
logger.shaded_zookeeper.level = INFO

appender.console.name = ConsoleAppender
appender.console.type = CONSOLE
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yyyy-MM-dd HH:mm:ss,SSS} %-5p %-60c %x - %m%n

appender.rolling.name = RollingFileAppender
appender.rolling.type = RollingFile
appender.rolling.append = true
appender.rolling.fileName = ${sys:log.file}
appender.rolling.filePattern = ${sys:log.file}.%i
appender.rolling.layout.type = PatternLayout
appender.rolling.layout.pattern = %d{yyyy-MM-dd HH:mm:ss,SSS} %-5p %-60c %x - %m%n
appender.rolling.policies.type = Policies
appender.rolling.policies.size.type = SizeBasedTriggeringPolicy
appender.rolling.policies.size.size = 100MB
appender.rolling.policies.startup.type = OnStartupTriggeringPolicy
appender.rolling.strategy.type = DefaultRolloverStrategy
appender.rolling.strategy.max = ${env:MAX_LOG_FILE_NUMBER:-10}

# Netty's pipeline warns about harmless closed channels.
logger.netty.name = org.jboss.netty.channel.DefaultChannelPipeline
logger.netty.level = OFF
`

// ConfigMap builds flink-config-<name>: the Flink configuration under the
// file name its version reads, plus the log configuration files.
func ConfigMap(in Input) (*corev1.ConfigMap, error) {
	p, err := newPlan(in)
	if err != nil {
		return nil, err
	}
	return p.configMap()
}

func (p *plan) configMap() (*corev1.ConfigMap, error) {
	file := p.version.ConfigFileName()
	rendered, err := RenderConfig(p.version, p.conf)
	if err != nil {
		return nil, err
	}
	data := map[string]string{file: rendered}
	for k, v := range p.spec.LogConfiguration {
		if k == ConfigYAMLFile || k == LegacyConfigFile {
			return nil, fmt.Errorf("spec.logConfiguration: %q is the Flink configuration file; set Flink options in spec.flinkConfiguration", k)
		}
		if errs := validation.IsConfigMapKey(k); len(errs) > 0 {
			return nil, fmt.Errorf("spec.logConfiguration: key %q: %s", k, strings.Join(errs, "; "))
		}
		data[k] = v
	}
	if _, ok := data[Log4jConsoleFile]; !ok {
		data[Log4jConsoleFile] = DefaultLog4jConsole
	}
	defaults, err := json.Marshal(FlinkDefaults(p.in.OperatorConfig))
	if err != nil {
		return nil, err
	}
	cm := &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            ConfigMapName(p.name),
			Namespace:       p.namespace,
			Labels:          CommonLabels(p.mode(), p.name),
			Annotations:     map[string]string{AnnotationFlinkDefaults: string(defaults)},
			OwnerReferences: []metav1.OwnerReference{OwnerReference(p.in.Deployment)},
		},
		Data: data,
	}
	if p.conf[keyExecutionTarget] == TargetApplication && p.in.EndedToken != "" {
		cm.Data[EndedJobKey] = p.in.EndedToken
	}
	setSpecHash(&cm.ObjectMeta, cm.Data)
	return cm, nil
}

// FlinkDefaults are the Flink keys of the operator's configuration: the
// default Flink configuration of every cluster.
func FlinkDefaults(operator config.Config) map[string]string {
	out := map[string]string{}
	for k, v := range operator {
		if !strings.HasPrefix(k, config.OperatorPrefix) {
			out[k] = v
		}
	}
	return out
}

// DeployedFlinkDefaults reads the Flink defaults a cluster was deployed
// with from its ConfigMap (AnnotationFlinkDefaults); ok is false for a
// ConfigMap without them (deployed by an operator version before them).
func DeployedFlinkDefaults(cm *corev1.ConfigMap) (defaults map[string]string, ok bool) {
	if cm == nil {
		return nil, false
	}
	raw, found := cm.Annotations[AnnotationFlinkDefaults]
	if !found || json.Unmarshal([]byte(raw), &defaults) != nil {
		return nil, false
	}
	return defaults, true
}

// WithFlinkDefaults is the operator configuration with its Flink keys
// replaced by defaults: how a running cluster is built again, with the
// operator's current kubernetes.operator.* settings and the Flink defaults
// of its deploy.
func WithFlinkDefaults(operator config.Config, defaults map[string]string) config.Config {
	out := make(config.Config, len(operator)+len(defaults))
	for k, v := range operator {
		if strings.HasPrefix(k, config.OperatorPrefix) {
			out[k] = v
		}
	}
	for k, v := range defaults {
		out[k] = v
	}
	return out
}

package flink

// TaskManager is one entry of GET /taskmanagers (TaskManagerInfo).
type TaskManager struct {
	ID                     string                `json:"id"`
	Path                   string                `json:"path"`
	DataPort               int                   `json:"dataPort"`
	JMXPort                int                   `json:"jmxPort"`
	TimeSinceLastHeartbeat int64                 `json:"timeSinceLastHeartbeat"`
	SlotsNumber            int                   `json:"slotsNumber"`
	FreeSlots              int                   `json:"freeSlots"`
	Blocked                bool                  `json:"blocked"`
	TotalResource          ResourceProfile       `json:"totalResource"`
	FreeResource           ResourceProfile       `json:"freeResource"`
	Hardware               HardwareDescription   `json:"hardware"`
	MemoryConfiguration    TaskManagerMemoryConf `json:"memoryConfiguration"`
}

// ResourceProfile is Flink's ResourceProfileInfo (memory sizes in MiB).
type ResourceProfile struct {
	CPUCores          float64            `json:"cpuCores"`
	TaskHeapMemory    int64              `json:"taskHeapMemory"`
	TaskOffHeapMemory int64              `json:"taskOffHeapMemory"`
	ManagedMemory     int64              `json:"managedMemory"`
	NetworkMemory     int64              `json:"networkMemory"`
	ExtendedResources map[string]float64 `json:"extendedResources"`
}

// HardwareDescription is the TaskManager host as the JVM sees it (bytes).
type HardwareDescription struct {
	CPUCores       int   `json:"cpuCores"`
	PhysicalMemory int64 `json:"physicalMemory"`
	FreeMemory     int64 `json:"freeMemory"`
	ManagedMemory  int64 `json:"managedMemory"`
}

// TaskManagerMemoryConf is Flink's TaskExecutorMemoryConfiguration (bytes).
type TaskManagerMemoryConf struct {
	FrameworkHeap      int64 `json:"frameworkHeap"`
	TaskHeap           int64 `json:"taskHeap"`
	FrameworkOffHeap   int64 `json:"frameworkOffHeap"`
	TaskOffHeap        int64 `json:"taskOffHeap"`
	NetworkMemory      int64 `json:"networkMemory"`
	ManagedMemory      int64 `json:"managedMemory"`
	JVMMetaspace       int64 `json:"jvmMetaspace"`
	JVMOverhead        int64 `json:"jvmOverhead"`
	TotalFlinkMemory   int64 `json:"totalFlinkMemory"`
	TotalProcessMemory int64 `json:"totalProcessMemory"`
}

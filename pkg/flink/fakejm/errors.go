package fakejm

import (
	"fmt"
	"net/http"
	"strings"
)

// Flink's error answers are {"errors": [...]}. A RestHandlerException is
// sent as one element holding the whole stringified exception with its
// stack trace; any other exception becomes a 500 with a generic first
// element and the trace wrapped in "<Exception on server side: ...>". The
// fake reproduces both shapes so that clients learn to match errors by
// substring rather than equality.

// reply is what a handler answers: a status and a JSON body (nil for none).
type reply struct {
	status int
	body   any
}

type errorBody struct {
	Errors []string `json:"errors"`
}

// fakeFrames imitates the "\n\tat ..." tail of a Java stack trace.
const fakeFrames = "\n\tat org.apache.flink.runtime.rest.handler.AbstractRestHandler.respondToRequest(AbstractRestHandler.java:83)" +
	"\n\tat org.apache.flink.runtime.rest.handler.AbstractHandler.respondAsLeader(AbstractHandler.java:196)" +
	"\n\tat org.apache.flink.runtime.rest.handler.LeaderRetrievalHandler.lambda$channelRead0$0(LeaderRetrievalHandler.java:83)" +
	"\n\tat java.base/java.lang.Thread.run(Thread.java:840)"

// restError answers like a RestHandlerException with the given status;
// causes are appended as "Caused by:" sections.
func restError(status int, msg string, causes ...string) reply {
	var b strings.Builder
	b.WriteString("org.apache.flink.runtime.rest.handler.RestHandlerException: ")
	b.WriteString(msg)
	b.WriteString(fakeFrames)
	for _, c := range causes {
		b.WriteString("\nCaused by: ")
		b.WriteString(c)
		b.WriteString("\n\t... 12 more")
	}
	return reply{status: status, body: errorBody{Errors: []string{b.String()}}}
}

// internalError answers like an unexpected exception inside Flink.
func internalError(exception string) reply {
	return reply{status: http.StatusInternalServerError, body: errorBody{Errors: []string{
		"Internal server error.",
		"<Exception on server side:\n" + exception + fakeFrames + "\n\nEnd of exception on server side>",
	}}}
}

// notFoundRoute answers an unknown URL the way Flink's router does.
func notFoundRoute(path string) reply {
	return reply{status: http.StatusNotFound, body: errorBody{Errors: []string{"Not found: " + path}}}
}

// badFormat is the 400 Flink gives for a body Jackson cannot map onto the
// request class (unknown field up to 1.19, wrong type, bad enum value).
func badFormat(requestClass, cause string) reply {
	return restError(http.StatusBadRequest,
		fmt.Sprintf("Request did not match expected format %s.", requestClass), cause)
}

// defaultFaultErrors is the body of an injected fault without custom text.
func defaultFaultErrors(status int) []string {
	switch status {
	case http.StatusServiceUnavailable:
		return []string{"org.apache.flink.runtime.rest.handler.RestHandlerException: Service temporarily unavailable due to an ongoing leader election. Please refresh." + fakeFrames}
	case http.StatusNotFound:
		return []string{"org.apache.flink.runtime.rest.NotFoundException: injected not found" + fakeFrames}
	case http.StatusInternalServerError:
		return []string{"Internal server error.", "<Exception on server side:\njava.lang.RuntimeException: injected failure" + fakeFrames + "\n\nEnd of exception on server side>"}
	}
	return []string{fmt.Sprintf("org.apache.flink.runtime.rest.handler.RestHandlerException: injected %d %s%s", status, http.StatusText(status), fakeFrames)}
}

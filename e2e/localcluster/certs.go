package localcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki holds the files of a cluster's throwaway PKI.
type pki struct {
	CACert, ServingCert, ServingKey string // serving chain of the apiserver
	SAKey, SAPub                    string // service-account token signing pair
	// KubeletCert/KubeletKey serve the node agent's kubelet API (127.0.0.1,
	// NodeAgentNode); the apiserver reaches it (pods/log) with
	// KubeletClientCert/KubeletClientKey. All from the CA.
	KubeletCert, KubeletKey             string
	KubeletClientCert, KubeletClientKey string
	caPEM                               []byte
}

// writePKI generates a CA and, signed by it, the apiserver's serving
// certificate for 127.0.0.1, the node agent's kubelet serving certificate
// and the apiserver's kubelet client certificate; and an RSA
// service-account key pair; all into dir.
func writePKI(dir string, serviceIP net.IP) (*pki, error) {
	p := &pki{
		CACert:            filepath.Join(dir, "ca.crt"),
		ServingCert:       filepath.Join(dir, "apiserver.crt"),
		ServingKey:        filepath.Join(dir, "apiserver.key"),
		SAKey:             filepath.Join(dir, "sa.key"),
		SAPub:             filepath.Join(dir, "sa.pub"),
		KubeletCert:       filepath.Join(dir, "kubelet.crt"),
		KubeletKey:        filepath.Join(dir, "kubelet.key"),
		KubeletClientCert: filepath.Join(dir, "apiserver-kubelet-client.crt"),
		KubeletClientKey:  filepath.Join(dir, "apiserver-kubelet-client.key"),
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "flinkop-localcluster-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage) *x509.Certificate {
		return &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(365 * 24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		}
	}
	serving := leaf(2, "kube-apiserver", x509.ExtKeyUsageServerAuth)
	serving.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, serviceIP}
	serving.DNSNames = []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
		"kubernetes.default.svc.cluster.local"}
	// The apiserver dials the node's InternalIP (127.0.0.1, see
	// --kubelet-preferred-address-types) and checks this certificate.
	kubelet := leaf(3, "system:node:"+NodeAgentNode, x509.ExtKeyUsageServerAuth)
	kubelet.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	kubelet.DNSNames = []string{NodeAgentNode, "localhost"}
	kubeletClient := leaf(4, "kube-apiserver-kubelet-client", x509.ExtKeyUsageClientAuth)
	var leaves []keyPair
	for _, tmpl := range []*x509.Certificate{serving, kubelet, kubeletClient} {
		kp, err := issue(tmpl, ca, caKey)
		if err != nil {
			return nil, fmt.Errorf("certificate %s: %w", tmpl.Subject.CommonName, err)
		}
		leaves = append(leaves, kp)
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	p.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	files := []struct {
		path string
		data []byte
	}{
		{p.CACert, p.caPEM},
		{p.ServingCert, leaves[0].cert},
		{p.ServingKey, leaves[0].key},
		{p.KubeletCert, leaves[1].cert},
		{p.KubeletKey, leaves[1].key},
		{p.KubeletClientCert, leaves[2].cert},
		{p.KubeletClientKey, leaves[2].key},
		{p.SAKey, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)})},
		{p.SAPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER})},
	}
	for _, f := range files {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// keyPair is a certificate and its key, PEM-encoded.
type keyPair struct{ cert, key []byte }

// issue signs tmpl, with a new P-256 key, by the CA.
func issue(tmpl, ca *x509.Certificate, caKey *ecdsa.PrivateKey) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return keyPair{}, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return keyPair{}, err
	}
	return keyPair{
		cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		key:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

func randomToken() string {
	b := make([]byte, 24)
	rand.Read(b)
	return hex.EncodeToString(b)
}

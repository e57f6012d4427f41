package bedrock

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"gw/adapters"
)

// credentialDoc is the key's JSON credential document (one `${VAR}`).
type credentialDoc struct {
	AccessKeyID     string `json:"access_key_id"`
	SecretAccessKey string `json:"secret_access_key"`
	SessionToken    string `json:"session_token"`
	Region          string `json:"region"`
}

// Credentials returns the credentials provider and region of a key: from
// its credential document when it holds keys, otherwise (a document `{}` or
// `{"region": ...}`, or none) from the standard AWS chain (environment,
// shared config and credentials files, web identity, ECS and EC2 instance
// roles; aws-sdk-go-v2/config), cached and refreshed by the SDK before
// expiry. A document without region takes AWS_REGION (or
// AWS_DEFAULT_REGION), the chain also the shared config's. env replaces
// os.LookupEnv for the region (nil: the process's).
func Credentials(doc adapters.Secret, env func(string) (string, bool)) (aws.CredentialsProvider, string, error) {
	if env == nil {
		env = os.LookupEnv
	}
	envRegion := func() string {
		if r, ok := env("AWS_REGION"); ok && r != "" {
			return r
		}
		r, _ := env("AWS_DEFAULT_REGION")
		return r
	}
	region := ""
	if doc.IsSet() {
		var d credentialDoc
		dec := json.NewDecoder(strings.NewReader(doc.Reveal()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&d); err != nil {
			return nil, "", errCredentials // never the decoder's text: it may quote the secret
		}
		region = d.Region
		if region == "" {
			region = envRegion()
		}
		switch {
		case d.AccessKeyID == "" && d.SecretAccessKey == "" && d.SessionToken == "":
			// {} or {"region": ...}: the keys come from the AWS chain.
		case d.AccessKeyID == "" || d.SecretAccessKey == "":
			return nil, "", errCredentials
		case region == "":
			return nil, "", errNoRegion
		default:
			return credentials.NewStaticCredentialsProvider(d.AccessKeyID, d.SecretAccessKey, d.SessionToken), region, nil
		}
	}
	// The chain: loading it reads the environment and the shared files
	// only; instance-role lookups happen on the first Retrieve.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opts := []func(*config.LoadOptions) error{}
	if region == "" {
		region = envRegion()
	}
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, "", errCredentials
	}
	if cfg.Region == "" {
		return nil, "", errNoRegion
	}
	return cfg.Credentials, cfg.Region, nil
}
